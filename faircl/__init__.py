"""faircl."""
