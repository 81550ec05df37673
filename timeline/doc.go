// Package timeline records what a run did over time (a drill's
// operations by serving node and outcome, with the client's events; a
// replica election's RTT per node) and draws it as a picture.
package timeline
