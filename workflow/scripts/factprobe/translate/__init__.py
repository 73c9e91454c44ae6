"""factprobe.translate."""
