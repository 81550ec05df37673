// Package timeline draws what a client did during a failover or a replica
// election as a picture, SVG or PNG.
//
// It draws a Drill (a load run through a failover: every operation, its
// serving node and outcome) and a Probe (a replica election: each node's
// round trip per probe round and the node elected). The figures go in documents and
// reports, so that a reader sees what the client did during a failover
// without reading logs, and so that two clients' runs of the same drill
// (rediskit's and go-redis's) compare side by side.
//
// It draws with gonum.org/v1/plot: SVG through vgsvg, its text as <text>
// elements in Liberation Sans, not embedded (the file stays small and
// diffable; the SVG names Arial and Helvetica, which have the same
// metrics, as fallbacks), and PNG through vgimg in pure Go at PNGDPI.
//
// # Reading a Drill figure
//
// The x axis is seconds since the run's start, 0 to Drill.Length (or to
// the last op, event or window; EmptyLength when there is none).
//
//   - Above zero, the acknowledged writes per bar (Drill.Bucket wide,
//     DefaultBucket 50 ms), stacked by the node that served them, one
//     colour per node ("writes via 127.0.0.1:6379"). A failover reads as
//     the colour changing from the old master's to the new one's, and a
//     write hold as a gap followed by a tall bar (the held writes running
//     at once).
//   - Below zero, the operations that ended in an error, stacked by the
//     error's kind ("error: master changed"); the y axis labels count
//     both ways up from zero.
//   - A red downward triangle with a count over a bar: acknowledged
//     writes in it that the final data does not hold ("acknowledged,
//     lost (2)"); a purple diamond: writes the data holds more than once
//     ("duplicated (1)").
//   - When any operation is a read, a second panel below draws the reads
//     the same way, each node in a lighter tint of its write colour
//     ("reads via ..."), read errors below zero.
//   - Windows (Drill.Windows) are shaded across the plots, their label and
//     width over a bracket above the plot ("write hold (150 ms)").
//   - Events are dashed vertical lines, numbered above the plot; the key
//     under it lists them: "1  +2.002s  failover requested: detail". They
//     are numbered in time order (equal times keep their order).
//   - The title is Run.Title, the line under it Run.Caption(), followed
//     by anything the figure had to change (wider bars, ops of no known
//     kind left out).
//
// A run with no operations still draws its axes, windows and events, with
// the note "no operations".
//
// # Reading a Probe figure
//
// The x axis is seconds since the start, to the last round or event; the
// y axis each node's smoothed RTT in milliseconds. One line per node,
// named with its roles in the order it had them ("127.0.0.1:6380
// (replica, then master)"); a round with no sample yet (RTT 0) breaks the
// line. A filled, ringed dot marks each round in which the node was
// elected, a red cross each round in which it was unhealthy. The
// election's events are numbered vertical lines with the key below, as
// in a Drill figure.
//
// # Colours
//
// Nodes are coloured in sorted address order, error kinds in sorted
// order, each from a fixed palette, over the union of every figure in a
// SideBySide: the same input always gives the same picture, byte for
// byte, and the same node the same colour in every panel. Writes,
// reads, errors, lost and duplicated marks get a legend entry only when
// the figure holds some.
//
// # SideBySide
//
// SideBySide draws drills (or probes) in a row on the same axes: the
// longest x axis, the widest bar, the y range that holds every panel's
// bars, a reads panel in every drill if any has reads, the same legend
// width and key height. Each panel is PanelWidth wide.
//
// # Bounds
//
// Nothing in the input can make a figure crash or grow without bound.
// Times outside [0, length] are clamped to it (a window given backwards
// is turned round); a run longer than MaxBuckets bars gets wider bars
// (the next 1-2-5 width) and says so in its caption; the MaxNodes nodes
// and MaxErrorKinds error kinds with the most operations get colours, a
// Drill stacks the rest as "other nodes (N)" and "error: other (N
// kinds)", and a Probe leaves their lines out and says how many; the
// first MaxEvents events (in time order) are drawn and keyed, and the key
// says how many more there were, and the first MaxWindows windows shaded; labels are cut to a fixed length with
// an ellipsis, and control characters and invalid UTF-8 become spaces.
// A picture is PanelWidth wide per panel and its height follows from the
// counts above, never from a value in the input.
package timeline
