package timeline

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Format is the kind of picture Render writes.
type Format int

const (
	// SVG is a vector picture, its text as <text> elements in the
	// Liberation fonts, which are not embedded (a viewer without them
	// substitutes its own sans-serif): small, diffable, searchable.
	SVG Format = iota
	// PNG is a raster picture at PNGDPI, drawn in pure Go (no cgo).
	PNG
)

// PNGDPI is the resolution of a PNG: 144 dots per inch, so that a 10-inch
// figure is 1,440 pixels wide and its 8-point text stays legible on a
// screen.
const PNGDPI = 144

func (f Format) String() string {
	switch f {
	case SVG:
		return "SVG"
	case PNG:
		return "PNG"
	}
	return fmt.Sprintf("Format(%d)", int(f))
}

// FormatError is FormatOf's error: a file name whose extension names no
// Format, or a Format value Render does not know.
type FormatError struct {
	Path   string // the file name given to FormatOf; "" for a bad Format value
	Format Format
}

func (e *FormatError) Error() string {
	if e.Path == "" {
		return fmt.Sprintf("timeline: unknown picture format %v: use timeline.SVG or timeline.PNG", e.Format)
	}
	ext := filepath.Ext(e.Path)
	if ext == "" {
		return fmt.Sprintf("timeline: %q has no extension: name the picture .svg or .png", e.Path)
	}
	return fmt.Sprintf("timeline: %q: unknown picture extension %q: name the picture .svg or .png", e.Path, ext)
}

// FormatOf is the Format a file name asks for by its extension, .svg or
// .png (in any case); any other extension is a *FormatError.
func FormatOf(path string) (Format, error) {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".svg":
		return SVG, nil
	case ".png":
		return PNG, nil
	}
	return 0, &FormatError{Path: path}
}

// Figure is a picture that can be written as SVG or PNG: a *Drill, a
// *Probe, or SideBySide of either.
type Figure interface {
	Render(w io.Writer, f Format) error
}

// WriteFile renders fig to path in the format its extension names
// (FormatOf). It writes a temporary file in the same directory and renames
// it over path, so a reader never sees half a picture and a failed render
// leaves an older file in place.
func WriteFile(path string, fig Figure) error {
	f, err := FormatOf(path)
	if err != nil {
		return err
	}
	if fig == nil {
		return errors.New("timeline: WriteFile: the figure is nil")
	}
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	tmp, err := os.CreateTemp(dir, "."+base+".tmp*")
	if err != nil {
		return fmt.Errorf("timeline: writing %s: %w", path, err)
	}
	if err := writeTemp(tmp, fig, f); err != nil {
		_ = tmp.Close()
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("timeline: writing %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("timeline: writing %s: %w", path, err)
	}
	return nil
}

// writeTemp renders fig into tmp and closes it.
func writeTemp(tmp *os.File, fig Figure, f Format) error {
	bw := bufio.NewWriter(tmp)
	if err := fig.Render(bw, f); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	// CreateTemp makes the file 0600; a picture is for others to read.
	if err := tmp.Chmod(0o644); err != nil {
		return err
	}
	return tmp.Close()
}

// fallbackFonts names, after each of vgsvg's font families, the fonts a
// viewer without Liberation Sans should use: Arial and Helvetica have its
// metrics (Liberation Sans was drawn to match Arial), so the layout,
// measured in Liberation, still fits. The family only appears at the start
// of a style attribute: text is escaped, so no `style="` occurs in it.
type fallbackFonts struct{ *vgsvg.Canvas }

func (f fallbackFonts) WriteTo(w io.Writer) (int64, error) {
	var buf bytes.Buffer
	if _, err := f.Canvas.WriteTo(&buf); err != nil {
		return 0, err
	}
	b := bytes.ReplaceAll(buf.Bytes(), []byte(`style="font-family:Liberation Sans;`), []byte(`style="font-family:'Liberation Sans',Arial,Helvetica,sans-serif;`))
	n, err := w.Write(b)
	return int64(n), err
}

// writeSheet draws a sheet on a canvas of the format and writes it.
func writeSheet(w io.Writer, f Format, s *sheet) error {
	var (
		cw vg.CanvasWriterTo
		c  vg.Canvas
	)
	switch f {
	case SVG:
		sc := vgsvg.NewWith(vgsvg.UseWH(s.w, s.h), vgsvg.EmbedFonts(false))
		cw, c = fallbackFonts{sc}, sc
	case PNG:
		ic := vgimg.NewWith(vgimg.UseWH(s.w, s.h), vgimg.UseDPI(PNGDPI))
		cw, c = vgimg.PngCanvas{Canvas: ic}, ic
	default:
		return &FormatError{Format: f}
	}
	s.draw(draw.NewCanvas(c, s.w, s.h))
	if _, err := cw.WriteTo(w); err != nil {
		return fmt.Errorf("timeline: writing the %v picture: %w", f, err)
	}
	return nil
}
