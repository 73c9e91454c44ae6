"""factprobe.probes."""
