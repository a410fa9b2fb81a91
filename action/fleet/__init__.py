"""``lockgate fleet``: where each revision of an artifact runs, from the registry alone."""
