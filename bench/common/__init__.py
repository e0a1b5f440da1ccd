"""Code two or more benches share (not a bench itself: `make bench` runs only `bench/*.py`)."""
