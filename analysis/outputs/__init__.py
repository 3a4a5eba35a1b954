"""Analyses out: the JSON document and its schema, Arrow tables, the terminal, Jupyter, and the report."""
