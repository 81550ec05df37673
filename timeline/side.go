package timeline

import (
	"errors"
	"fmt"
	"io"
)

// MaxSideBySide is the most figures SideBySide puts in one picture (a
// PNG of six is 8,640 pixels wide).
const MaxSideBySide = 6

type sideBySide struct{ figs []Figure }

// SideBySide is one picture of the figures in a row, left to right, on
// the same axes: the same x range, bar width and y ranges, and the same
// colour for the same node, so that two runs (rediskit's and go-redis's
// on the same drill) compare at a glance. The figures are all *Drill or
// all *Probe (a SideBySide among them is flattened), at most
// MaxSideBySide; Render says what is wrong otherwise.
func SideBySide(figs ...Figure) Figure {
	var flat []Figure
	for _, f := range figs {
		if s, ok := f.(*sideBySide); ok {
			flat = append(flat, s.figs...)
			continue
		}
		flat = append(flat, f)
	}
	return &sideBySide{figs: flat}
}

func (s *sideBySide) Render(w io.Writer, f Format) error {
	switch {
	case len(s.figs) == 0:
		return errors.New("timeline: SideBySide of no figures")
	case len(s.figs) > MaxSideBySide:
		return fmt.Errorf("timeline: SideBySide of %d figures: at most %d fit in one picture", len(s.figs), MaxSideBySide)
	}
	var (
		ds []*Drill
		ps []*Probe
	)
	for i, fig := range s.figs {
		switch v := fig.(type) {
		case *Drill:
			if v == nil {
				return fmt.Errorf("timeline: SideBySide figure %d is a nil *Drill", i)
			}
			ds = append(ds, v)
		case *Probe:
			if v == nil {
				return fmt.Errorf("timeline: SideBySide figure %d is a nil *Probe", i)
			}
			ps = append(ps, v)
		default:
			return fmt.Errorf("timeline: SideBySide figure %d is a %T: only *Drill and *Probe figures can share axes", i, fig)
		}
	}
	if len(ds) > 0 && len(ps) > 0 {
		return errors.New("timeline: SideBySide of drills and probes: their axes differ; put each kind in its own picture")
	}
	if len(ds) > 0 {
		return renderDrills(w, f, ds)
	}
	return renderProbes(w, f, ps)
}
