package configerr

import "strings"

// Error reports one configuration field that cannot be used.
type Error struct {
	// Package is the reporting package's name ("sentinel").
	Package string
	// Struct is the configuration type ("Config", "LimiterConfig"), or
	// empty when the value at fault is a constructor's argument rather
	// than a field (Field is then the argument's name: "client").
	Struct string
	// Field is the field at fault, as a Go expression below Struct:
	// "MasterName", `Databases["main"].Weight`. Several fields checked
	// together are named with "/" between them ("Client/Options").
	Field string
	// Problem completes the sentence: "is required", "must not be
	// negative (0 means the default, 10)".
	Problem string
	// Kind, when set, is a sentinel error the Error matches with
	// errors.Is (hashring.ErrInvalidConfig, for example), for packages
	// that had one before this type.
	Kind error
}

// Error reads "<package>: <Struct>.<Field> <problem>".
func (e *Error) Error() string {
	var b strings.Builder
	if e.Package != "" {
		b.WriteString(e.Package)
		b.WriteString(": ")
	}
	b.WriteString(e.Struct)
	if e.Struct != "" && e.Field != "" {
		b.WriteByte('.')
	}
	b.WriteString(e.Field)
	if e.Problem != "" {
		if e.Struct != "" || e.Field != "" {
			b.WriteByte(' ')
		}
		b.WriteString(e.Problem)
	}
	return b.String()
}

// Is reports whether target is the Error's Kind.
func (e *Error) Is(target error) bool { return e.Kind != nil && target == e.Kind }
