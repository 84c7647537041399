// Command handshakes is bench/tls.sh's Go handshake load (HANDSHAKE_CLIENT=go): PARALLEL
// clients, each making one TLS 1.3 connection after another for DURATION, sending
// `GET / HTTP/1.0` on each (as `openssl s_time -www /` does) and reading the answer to its
// end. With -reuse every client resumes the session of its previous connection (a ticket or
// the session cache).
//
// It prints the line bench/tls.sh reads, "N connections in S real seconds", and a second
// one with its own CPU time per connection, so that a run shows whether the client or the
// server was the limit.
package main

import (
	"crypto/tls"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

func main() {
	address := flag.String("connect", "127.0.0.1:443", "host:port")
	duration := flag.Duration("time", 5*time.Second, "how long to run")
	parallel := flag.Int("parallel", 4, "clients in parallel")
	reuse := flag.Bool("reuse", false, "resume the previous connection's session")
	profile := flag.String("cpuprofile", "", "write the client's CPU profile to this file")
	flag.Parse()

	if *profile != "" {
		file, err := os.Create(*profile)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		pprof.StartCPUProfile(file)
		defer pprof.StopCPUProfile()
	}

	var done, failed atomic.Int64
	var firstError atomic.Value
	deadline := time.Now().Add(*duration)
	started := time.Now()
	var group sync.WaitGroup
	for i := 0; i < *parallel; i++ {
		group.Add(1)
		go func() {
			defer group.Done()
			config := &tls.Config{
				// The benchmark's certificate is self-signed: the chain is not checked, the
				// handshake's signature still is.
				InsecureSkipVerify: true,
				MinVersion:         tls.VersionTLS13,
			}
			if *reuse {
				config.ClientSessionCache = tls.NewLRUClientSessionCache(1)
			}
			buffer := make([]byte, 4096)
			for time.Now().Before(deadline) {
				if err := once(*address, config, buffer); err != nil {
					failed.Add(1)
					firstError.CompareAndSwap(nil, err.Error())
					continue
				}
				done.Add(1)
			}
		}()
	}
	group.Wait()
	elapsed := time.Since(started).Seconds()
	fmt.Printf("%d connections in %.2f real seconds\n", done.Load(), elapsed)
	var usage syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &usage) == nil && done.Load() > 0 {
		user := time.Duration(usage.Utime.Nano())
		system := time.Duration(usage.Stime.Nano())
		fmt.Printf("client CPU %.0f us per connection (user %.2f s, system %.2f s)\n",
			float64((user+system).Microseconds())/float64(done.Load()), user.Seconds(), system.Seconds())
	}
	if n := failed.Load(); n > 0 {
		fmt.Fprintf(os.Stderr, "%d connections failed, the first: %v\n", n, firstError.Load())
		if done.Load() == 0 {
			os.Exit(1)
		}
	}
}

// once makes one connection: handshake, request, the whole answer, close.
func once(address string, config *tls.Config, buffer []byte) error {
	raw, err := net.DialTimeout("tcp", address, 5*time.Second)
	if err != nil {
		return err
	}
	conn := tls.Client(raw, config)
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	if err := conn.Handshake(); err != nil {
		return err
	}
	if conn.ConnectionState().Version != tls.VersionTLS13 {
		return fmt.Errorf("not TLS 1.3")
	}
	if _, err := io.WriteString(conn, "GET / HTTP/1.0\r\n\r\n"); err != nil {
		return err
	}
	for {
		_, err := conn.Read(buffer)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}
