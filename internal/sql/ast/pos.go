package ast

import "github.com/rekuiper/rekuiper/internal/sql/token"

// Pos returns the position of the window function name.
func (w *Window) Pos() token.Pos { return w.P }
