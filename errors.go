package rediskit

import (
	"fmt"
)

// KindError is the error of a URL whose kind does not fit: a URL of
// another kind than Config.Kind forces, or a cluster URL whose one seed
// answered that it is not a cluster node. URL is the URL without its
// passwords; nothing was dialled, except the one probe a cluster seed
// gets (see "Choosing the topology").
type KindError struct {
	// URL is the URL at fault, with every password replaced by "xxxxx".
	URL string
	// Want is the kind asked for (Config.Kind, or cluster for a cluster
	// URL); Got the kind the URL or the server turned out to be.
	Want, Got Kind
	// Reason says why, and what to do.
	Reason string
}

func (e *KindError) Error() string {
	return fmt.Sprintf("rediskit: %s is %v, not %v: %s", e.URL, e.Got, e.Want, e.Reason)
}

// DetectError is the error of NewClient when the probe of a plain
// redis:// or rediss:// seed got no answer: the server could not be
// dialled, or did not reply within Config.DetectTimeout. No client was
// made, and nothing of the caller's ran. Addr is the server probed; URL
// the URL without its password; Err what went wrong.
//
// The probe asks whether the server is a cluster node (CLUSTER INFO). To
// make the client without it — and so without dialling at NewClient, the
// client then connecting when it is first used — say what the server is:
// Config.Kind = KindStandalone (or NoClusterDetection), or KindCluster,
// or write the URL as redis+cluster://.
type DetectError struct {
	URL  string
	Addr string
	Err  error
}

func (e *DetectError) Error() string {
	return fmt.Sprintf("rediskit: %s: cannot tell whether %s is a cluster node or a standalone server, no client made: %v "+
		"(to skip the probe, set Config.Kind to KindStandalone or KindCluster, or Config.NoClusterDetection)", e.URL, e.Addr, e.Err)
}

func (e *DetectError) Unwrap() error { return e.Err }
