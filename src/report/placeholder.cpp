// The report writers (JSON, text) lands with `dumpsift analyze`.
