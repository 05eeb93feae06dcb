"""Services, the researcher's reading: the label frame, quality control, report, progress, adjudication,
models and judges against people."""
