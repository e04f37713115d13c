package connector

// Batcher is an optional interface of a sink whose writes can wait for the
// end of the batch they belong to and leave together. The engine calls
// HoldWrites once, before the first Write, when it will call EndBatch after
// every batch of Writes (on the goroutine that calls Write); a sink it was
// not called on writes each message at once, as before.
type Batcher interface {
	// HoldWrites lets later Writes leave their messages buffered until
	// EndBatch.
	HoldWrites()
	// EndBatch sends what the batch's Writes left buffered. Its error is
	// a write error of the connection (the next Write reports it too).
	EndBatch() error
}
