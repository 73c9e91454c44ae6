"""factprobe.distractors."""
