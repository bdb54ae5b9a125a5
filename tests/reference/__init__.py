"""References other tools give, to measure `judge` against (vendored, with their licences)."""
