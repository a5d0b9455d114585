// The analysis layer (size groups, findings) lands with `dumpsift analyze`.
