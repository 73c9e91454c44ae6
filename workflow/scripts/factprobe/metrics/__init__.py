"""factprobe.metrics."""
