"""Services, what leaves the tool: label, adjudicated and pair files; the dataset folder."""
