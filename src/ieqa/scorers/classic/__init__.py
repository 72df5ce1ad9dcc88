"""Weight-free classical scorers: full-/no-reference metrics, edit regions, the classic composite."""
