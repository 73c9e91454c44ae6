"""factprobe.report."""
