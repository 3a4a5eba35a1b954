"""What to change, as data: recommendations, changes of setting (from the records in `analysis.settings`), the validator every one passes, and their words."""
