package logdedup

import (
	"context"
	"log/slog"
	"slices"
)

// New returns h wrapped, or h itself when it is already wrapped (so
// wrapping at every layer costs one wrapper).
func New(h slog.Handler) slog.Handler {
	if d, ok := h.(*handler); ok {
		return d
	}
	return &handler{inner: h, frames: []frame{{}}}
}

// Logger returns a logger whose handler is l's, wrapped by New; nil for
// nil, and l itself when it is already wrapped.
func Logger(l *slog.Logger) *slog.Logger {
	if l == nil {
		return nil
	}
	if _, ok := l.Handler().(*handler); ok {
		return l
	}
	return slog.New(New(l.Handler()))
}

// handler keeps the attributes bound to it itself, rather than handing
// them to inner (which would format them at once, beyond reach), and
// passes inner each record with everything in it, deduplicated.
type handler struct {
	inner slog.Handler
	// frames[0] holds the attributes bound at the top level; each later
	// frame is a group opened by WithGroup, with the attributes bound
	// inside it. Frames are never changed once shared: With and
	// WithGroup copy.
	frames []frame
}

type frame struct {
	group string // "" for frames[0]
	attrs []slog.Attr
}

func (h *handler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.inner.Enabled(ctx, level)
}

func (h *handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	if len(attrs) == 0 {
		return h
	}
	frames := slices.Clone(h.frames)
	last := &frames[len(frames)-1]
	last.attrs = append(slices.Clip(last.attrs), attrs...)
	return &handler{inner: h.inner, frames: frames}
}

func (h *handler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	frames := append(slices.Clip(h.frames), frame{group: name})
	return &handler{inner: h.inner, frames: frames}
}

func (h *handler) Handle(ctx context.Context, r slog.Record) error {
	attrs := make([]slog.Attr, 0, r.NumAttrs())
	r.Attrs(func(a slog.Attr) bool {
		attrs = append(attrs, a)
		return true
	})
	// Nest from the innermost group out: the record's attributes go in
	// the last group opened, after the attributes bound there.
	for i := len(h.frames) - 1; i >= 0; i-- {
		f := h.frames[i]
		level := make([]slog.Attr, 0, len(f.attrs)+len(attrs))
		level = append(append(level, f.attrs...), attrs...)
		if i == 0 {
			attrs = level
			break
		}
		attrs = []slog.Attr{{Key: f.group, Value: slog.GroupValue(level...)}}
	}
	out := slog.NewRecord(r.Time, r.Level, r.Message, r.PC)
	out.AddAttrs(Dedup(attrs)...)
	return h.inner.Handle(ctx, out)
}

// Dedup returns attrs with each key once: the last value at the first
// position, groups of the same key merged, empty groups dropped and
// inline groups spliced in (see the package documentation). Values are
// resolved (slog.LogValuer) first, since a LogValuer may turn out to be
// a group. attrs is not changed.
func Dedup(attrs []slog.Attr) []slog.Attr {
	out := make([]slog.Attr, 0, len(attrs))
	index := make(map[string]int, len(attrs))
	var add func(a slog.Attr)
	add = func(a slog.Attr) {
		a.Value = a.Value.Resolve()
		if a.Equal(slog.Attr{}) {
			return // slog's handlers ignore an empty Attr
		}
		if a.Value.Kind() == slog.KindGroup {
			members := a.Value.Group()
			if a.Key == "" {
				for _, m := range members {
					add(m)
				}
				return
			}
			members = Dedup(members)
			if len(members) == 0 {
				return // written as nothing: it replaces nothing
			}
			if i, ok := index[a.Key]; ok && out[i].Value.Kind() == slog.KindGroup {
				merged := append(slices.Clone(out[i].Value.Group()), members...)
				out[i].Value = slog.GroupValue(Dedup(merged)...)
				return
			}
			a.Value = slog.GroupValue(members...)
		}
		if i, ok := index[a.Key]; ok {
			out[i].Value = a.Value
			return
		}
		index[a.Key] = len(out)
		out = append(out, a)
	}
	for _, a := range attrs {
		add(a)
	}
	return out
}
