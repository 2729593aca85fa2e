// Command devdb runs an embedded FerretDB (SQLite backend) as rumongo's development and test server.
//
// Embedding the ferretdb package (instead of building cmd/ferretdb from the module zip) avoids the
// upstream version.txt panic and keeps the build to one pinned go.mod.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/FerretDB/FerretDB/ferretdb"
)

func main() {
	host := flag.String("host", "127.0.0.1", "address to listen on")
	port := flag.Int("port", 27017, "TCP port to listen on")
	dir := flag.String("dir", filepath.Join(os.TempDir(), "rumongo-devdb"), "directory for the SQLite data files")
	var tls tlsFiles
	flag.StringVar(&tls.cert, "tls-cert", "", "PEM server certificate (and chain): listen with TLS instead of plain TCP")
	flag.StringVar(&tls.key, "tls-key", "", "PEM private key of --tls-cert")
	flag.StringVar(&tls.ca, "tls-ca", "", "PEM CA certificates: when given, every client must present a certificate they signed")
	flag.Parse()

	if (tls.cert == "") != (tls.key == "") || (tls.ca != "" && tls.cert == "") {
		fmt.Fprintln(os.Stderr, "devdb: --tls-cert and --tls-key go together, and --tls-ca needs them")
		os.Exit(2)
	}
	if err := run(*host, *port, *dir, tls); err != nil {
		fmt.Fprintln(os.Stderr, "devdb:", err)
		os.Exit(1)
	}
}

// tlsFiles are the TLS listener's files; an empty cert means a plain TCP listener.
type tlsFiles struct{ cert, key, ca string }

// listener listens on addr with TLS when the files say so (FerretDB's TLS listener requires and
// verifies a client certificate when given a CA file), else on plain TCP.
func (t tlsFiles) listener(addr string) ferretdb.ListenerConfig {
	if t.cert == "" {
		return ferretdb.ListenerConfig{TCP: addr}
	}
	return ferretdb.ListenerConfig{TLS: addr, TLSCertFile: t.cert, TLSKeyFile: t.key, TLSCAFile: t.ca}
}

func run(host string, port int, dir string, tls tlsFiles) error {
	dataDir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	if err = os.MkdirAll(dataDir, 0o755); err != nil {
		return err
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	go stopWhenOrphaned(stop)

	addr := net.JoinHostPort(host, fmt.Sprint(port))
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	f, err := ferretdb.New(&ferretdb.Config{
		Listener:  tls.listener(addr),
		Logger:    logger,
		Handler:   "sqlite",
		SQLiteURL: "file:" + dataDir + "/",
	})
	if err != nil {
		return err
	}

	done := make(chan error, 1)
	go func() { done <- f.Run(ctx) }()

	// Say "ready" only once a client can really connect, so callers can wait on that line.
	if err = waitAccepting(ctx, addr, 30*time.Second); err != nil {
		return err
	}
	uri := fmt.Sprintf("mongodb://%s/", addr)
	if tls.cert != "" {
		uri += "?tls=true"
	}
	fmt.Printf("devdb ready %s\n", uri)

	return <-done
}

func waitAccepting(ctx context.Context, addr string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			return conn.Close()
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("server did not accept connections on %s: %w", addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stopWhenOrphaned stops the server when the process that started it dies without stopping it
// (a crashed test runner), so no server is left behind.
func stopWhenOrphaned(stop context.CancelFunc) {
	parent := os.Getppid()
	for os.Getppid() == parent {
		time.Sleep(time.Second)
	}
	stop()
}
