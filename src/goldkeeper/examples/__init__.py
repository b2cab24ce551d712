"""Small example data shipped inside the package, for the quick start."""
