// Package zero holds the module's configuration rule in one place: a
// Config field left at its zero value means its documented default
// (CONTRIBUTING.md, "Configuration"). Every withDefaults applies the rule
// with Default, so a reader sees one idiom and a field cannot be given a
// default by a comparison that means something else (a negative value
// stays: it means "off" where a field allows that).
package zero
