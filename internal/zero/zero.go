package zero

// Default sets *field to def when it holds its type's zero value.
func Default[T comparable](field *T, def T) {
	var zero T
	if *field == zero {
		*field = def
	}
}
