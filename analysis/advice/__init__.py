"""What to change, as data: recommendations, what each setting means, the validator every one passes, and their words."""
