"""factprobe.scoring."""
