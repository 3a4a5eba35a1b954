"""Findings -> incidents: findings of one episode grouped by mechanism, their root cause ranked among candidates."""
