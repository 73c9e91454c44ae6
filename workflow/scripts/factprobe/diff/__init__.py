"""factprobe.diff."""
