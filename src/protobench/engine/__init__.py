"""The headless core: plans, worker processes, metrics, aggregation, reports."""
