"""Client-side behaviour of kubectl commands that scenarios replay (drain)."""
