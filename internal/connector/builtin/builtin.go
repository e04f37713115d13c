// Package builtin registers every connector compiled into rekuiper. The
// daemon calls Register once on its registry at startup. Adding a
// connector is its own folder and one line in Register's list: a type that
// shares clients builds them from the registry's Env (connector.Env), and
// one whose clients can be named connections registers its key function
// there too.
package builtin

import (
	"fmt"

	"github.com/rekuiper/rekuiper/internal/connector"
	"github.com/rekuiper/rekuiper/internal/connector/file"
	"github.com/rekuiper/rekuiper/internal/connector/httppull"
	"github.com/rekuiper/rekuiper/internal/connector/httppush"
	"github.com/rekuiper/rekuiper/internal/connector/kafka"
	"github.com/rekuiper/rekuiper/internal/connector/logsink"
	"github.com/rekuiper/rekuiper/internal/connector/memory"
	"github.com/rekuiper/rekuiper/internal/connector/mqtt"
	"github.com/rekuiper/rekuiper/internal/connector/nop"
	"github.com/rekuiper/rekuiper/internal/connector/redis"
	"github.com/rekuiper/rekuiper/internal/connector/rest"
	"github.com/rekuiper/rekuiper/internal/connector/simulator"
	"github.com/rekuiper/rekuiper/internal/connector/sqldb"
	"github.com/rekuiper/rekuiper/internal/connector/websocket"
)

// Register adds all built-in connectors to r.
func Register(r *connector.Registry) error {
	for _, reg := range []struct {
		name string
		f    func(*connector.Registry) error
	}{
		{memory.Type, memory.Register},
		{simulator.Type, simulator.Register},
		{file.Type, file.Register},
		{httppull.Type, httppull.Register},
		{httppush.Type, httppush.Register},
		{rest.Type, rest.Register},
		{logsink.Type, logsink.Register},
		{nop.Type, nop.Register},
		{kafka.Type, kafka.Register},
		{redis.Type, redis.Register},
		{sqldb.Type, sqldb.Register},
		{websocket.Type, websocket.Register},
		{mqtt.Type, mqtt.Register},
	} {
		if err := reg.f(r); err != nil {
			return fmt.Errorf("register %s connector: %w", reg.name, err)
		}
	}
	return nil
}
