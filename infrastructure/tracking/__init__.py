"""Tracked projections over a positioned log (the Journal's or the Storage SPI's), and the loop that
follows a log: rows and position committed together, generations swapped atomically."""
