package cluster

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// nodeIDFile holds the daemon's node id in the data folder.
const nodeIDFile = "node_id"

// LoadNodeID returns the node id kept in dataDir, creating a random one on
// first use (tmp file, fsync, rename); without a data folder it is empty. It names this daemon in what other
// systems keep for it, such as the derived MQTT client ids, so it lives
// with the data: a copied data folder is the same node.
func LoadNodeID(dataDir string) (string, error) {
	if dataDir == "" {
		return "", nil
	}
	path := filepath.Join(dataDir, nodeIDFile)
	b, err := os.ReadFile(path)
	if err == nil {
		id := strings.TrimSpace(string(b))
		if id == "" {
			return "", fmt.Errorf("read node id: %s is empty", path)
		}
		return id, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("read node id: %w", err)
	}
	raw := make([]byte, 16)
	if _, err := rand.Read(raw); err != nil {
		return "", fmt.Errorf("create node id: %w", err)
	}
	id := hex.EncodeToString(raw)
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return "", fmt.Errorf("create node id: %w", err)
	}
	tmp, err := os.CreateTemp(dataDir, nodeIDFile+".tmp*")
	if err != nil {
		return "", fmt.Errorf("create node id: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.WriteString(id + "\n"); err != nil {
		tmp.Close()
		return "", fmt.Errorf("write node id: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return "", fmt.Errorf("sync node id: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return "", fmt.Errorf("close node id: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return "", fmt.Errorf("rename node id: %w", err)
	}
	return id, nil
}
