"""Services, what gets rated: pair files and their checks, assignment, control pairs."""
