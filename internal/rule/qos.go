package rule

// QoS is a rule's processing guarantee (the qos option): 0, 1 or 2. In
// JSON and YAML it is the bare integer.
type QoS int

// The processing guarantees a rule may ask for.
const (
	// AtMostOnce (0) takes no checkpoints: what is in flight when the rule
	// stops or fails is lost.
	AtMostOnce QoS = 0
	// AtLeastOnce (1) takes barrier checkpoints and rewinds the sources
	// to the last one after a failure: nothing is lost, rows may be sent
	// twice.
	AtLeastOnce QoS = 1
	// ExactlyOnce (2) also aligns the barriers of the rule's sources, and
	// transactional sinks commit with the checkpoints.
	ExactlyOnce QoS = 2
)

// Valid reports whether q is one of AtMostOnce, AtLeastOnce and
// ExactlyOnce.
func (q QoS) Valid() bool { return q >= AtMostOnce && q <= ExactlyOnce }

// Checkpointed reports whether a rule at q takes barrier checkpoints (qos
// 1 and 2): its sources are rewindable, each rule reads a stream through a
// source of its own, and push sources write the source log.
func (q QoS) Checkpointed() bool { return q >= AtLeastOnce }

// Aligned reports whether a rule at q processes exactly once (qos 2): a
// source whose barrier arrived waits until every source delivered it, and
// transactional sinks write in transactions committed with checkpoints.
func (q QoS) Aligned() bool { return q >= ExactlyOnce }
