package operator

import "github.com/rekuiper/rekuiper/internal/row"

// Session windows follow eKuiper's two implementations, which differ.
//
// In processing time the window's maximum duration is a clock of its own:
// it ticks every Size from the aligned end after the rule's start, like a
// tumbling window's boundaries. A tick closes the open session when its
// first buffered row is at least Size old; a session also closes Timeout
// after its last row. A session cut by a tick goes on: the next rows, however
// late, belong to a session that starts at the cut (window_start() is the
// tick), until a timeout closes a session that holds rows.
//
// In event time the window works on the rows the watermark released, at
// each watermark, as nextEventSession describes.

// addSessionRow buffers a row of a processing-time session and (re)arms
// its timeout.
func (w *Window) addSessionRow(ctx *Context, t *row.Tuple) {
	w.st.Rows = append(w.st.Rows, t)
	if w.Spec.EventTime {
		return
	}
	if w.st.SessLast == 0 {
		w.st.SessStart = t.Timestamp
	}
	w.st.SessLast = t.Timestamp
	ctx.Timers.At(t.Timestamp + w.Spec.Timeout)
}

// sessionTick handles a processing-time timer: a tick of the maximum
// duration's clock or a session's timeout.
func (w *Window) sessionTick(ctx *Context, now int64, emit Emit) {
	if now == w.st.Next {
		w.st.Next += w.Spec.Size
		ctx.Timers.At(w.st.Next)
		if len(w.st.Rows) > 0 && now-w.st.Rows[0].Timestamp >= w.Spec.Size {
			w.emitSession(w.st.SessStart, now, emit)
			w.st.SessStart = now
		}
	}
	if w.st.SessLast != 0 && now == w.st.SessLast+w.Spec.Timeout && len(w.st.Rows) > 0 {
		// A timeout with no rows buffered (they went out at a tick)
		// leaves the session open: the next row continues it.
		w.emitSession(w.st.SessStart, now, emit)
		w.st.Rows = nil
		w.st.SessStart, w.st.SessLast = 0, 0
	}
}

// sessionWatermark closes every event-time session the watermark wm ends.
// A session cut at its maximum duration is followed by one that starts at
// the cut, whenever its first row comes.
func (w *Window) sessionWatermark(wm int64, emit Emit) {
	for {
		end, cut, ok := w.nextEventSession(wm)
		if !ok || end > wm {
			return
		}
		start := w.st.Rows[0].Timestamp
		if w.st.CutAt != 0 {
			start = w.st.CutAt
		}
		w.emitSession(start, end, emit)
		w.st.CutAt = 0
		if cut {
			w.st.CutAt = end
		}
	}
}

// nextEventSession finds where the first buffered event-time session ends,
// as eKuiper does: rows further apart than the timeout end a session at the
// earlier row plus the timeout, and so does a watermark more than the
// timeout after the last row. The maximum duration is a boundary aligned
// like a tumbling window's end after the first row (eKuiper's alignment on
// the clock unit), that moves on by one Size for each row past it; it cuts
// the session at a row past it when the session began more than Size before
// it and the session would not time out earlier. cut tells that the session
// ends at such a boundary.
func (w *Window) nextEventSession(wm int64) (end int64, cut, ok bool) {
	rows := w.st.Rows
	if len(rows) == 0 {
		return 0, false, false
	}
	first := rows[0].Timestamp
	boundary := AlignedEnd(first, w.Spec.Size, w.Spec.Unit)
	for i, r := range rows {
		ts := r.Timestamp
		timedOut := i > 0 && ts-rows[i-1].Timestamp > w.Spec.Timeout
		if timedOut {
			end, ok = rows[i-1].Timestamp+w.Spec.Timeout, true
		}
		if ts > boundary {
			if boundary-w.Spec.Size > first && (!timedOut || boundary < end) {
				end, cut, ok = boundary, true, true
			}
			boundary += w.Spec.Size
		}
		if ok {
			return end, cut, true
		}
	}
	if last := rows[len(rows)-1].Timestamp; wm-last > w.Spec.Timeout {
		return last + w.Spec.Timeout, false, true
	}
	return 0, false, false
}

// emitSession emits the buffered rows before end as the session
// [start, end) and keeps the others.
func (w *Window) emitSession(start, end int64, emit Emit) {
	n := 0
	for n < len(w.st.Rows) && w.st.Rows[n].Timestamp < end {
		n++
	}
	in := make([]row.Row, n)
	for i, t := range w.st.Rows[:n] {
		in[i] = t
	}
	emit(Item{Kind: Data, Set: &row.Set{Rows: in, Window: row.Window{Start: start, End: end, Trigger: end}}})
	rest := append([]*row.Tuple(nil), w.st.Rows[n:]...)
	w.st.Rows = rest
}
