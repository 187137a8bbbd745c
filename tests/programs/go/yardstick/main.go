// A Go program that exercises what Go's runtime needs from a kernel: threads (clone), futexes,
// epoll (the network poller), timers, signals (os/signal, and SIGURG for the preemption of a
// goroutine that never calls a function), fork+exec (os/exec), files and a TCP listener with
// an HTTP server on the loopback. Its output does not depend on timing or on the CPU count, so
// it can be compared with a native run.
package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Echo server on the loopback; many client goroutines, each with its own connection.
func tcpEcho() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	check(err)
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func(c net.Conn) {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					l, err := r.ReadString('\n')
					if err != nil {
						return
					}
					if _, err := c.Write([]byte("echo " + l)); err != nil {
						return
					}
				}
			}(c)
		}
	}()
	const clients = 32
	answers := make([]string, clients)
	var wg sync.WaitGroup
	for i := 0; i < clients; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			c, err := net.Dial("tcp", ln.Addr().String())
			check(err)
			defer c.Close()
			r := bufio.NewReader(c)
			var got []string
			for j := 0; j < 3; j++ {
				fmt.Fprintf(c, "client %d line %d\n", i, j)
				l, err := r.ReadString('\n')
				check(err)
				got = append(got, strings.TrimSpace(l))
			}
			answers[i] = strings.Join(got, "; ")
		}(i)
	}
	wg.Wait()
	for _, a := range answers {
		fmt.Println(a)
	}
}

// An HTTP server and client on the loopback.
func httpRoundTrip() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	check(err)
	mux := http.NewServeMux()
	mux.HandleFunc("/sum", func(w http.ResponseWriter, r *http.Request) {
		n := 0
		for _, c := range r.URL.Query().Get("digits") {
			n += int(c - '0')
		}
		fmt.Fprintf(w, "sum=%d", n)
	})
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln)
	for _, digits := range []string{"123", "999999", "4242"} {
		resp, err := http.Get("http://" + ln.Addr().String() + "/sum?digits=" + digits)
		check(err)
		body, err := io.ReadAll(resp.Body)
		check(err)
		resp.Body.Close()
		fmt.Printf("http %s: %d %s\n", digits, resp.StatusCode, body)
	}
	check(srv.Close())
}

// A goroutine spinning without function calls can only be stopped by the runtime's
// asynchronous preemption (a SIGURG to its thread); with GOMAXPROCS(1) main needs it.
func preemption() {
	old := runtime.GOMAXPROCS(1)
	defer runtime.GOMAXPROCS(old)
	var stop, spins int64
	done := make(chan bool)
	go func() {
		for atomic.LoadInt64(&stop) == 0 {
			spins++
		}
		done <- true
	}()
	time.Sleep(20 * time.Millisecond)
	atomic.StoreInt64(&stop, 1)
	<-done
	fmt.Println("preempted spinner stopped:", spins > 0)
}

func timersAndChannels() {
	start := time.Now()
	t := time.NewTicker(2 * time.Millisecond)
	ticks := 0
	for range t.C {
		ticks++
		if ticks == 5 {
			break
		}
	}
	t.Stop()
	<-time.After(3 * time.Millisecond)
	fmt.Println("ticks:", ticks, "time went on:", time.Since(start) >= 13*time.Millisecond)

	results := make(chan int)
	for i := 1; i <= 1000; i++ {
		go func(i int) { results <- i * i }(i)
	}
	sum := 0
	for i := 0; i < 1000; i++ {
		sum += <-results
	}
	fmt.Println("sum of squares:", sum)
}

func signals() {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGUSR1)
	check(syscall.Kill(os.Getpid(), syscall.SIGUSR1))
	select {
	case s := <-ch:
		fmt.Println("signal:", s)
	case <-time.After(10 * time.Second):
		fmt.Println("signal: none")
	}
	signal.Stop(ch)
}

func processes() {
	out, err := exec.Command("/bin/sh", "-c", "echo from sh; exit 3").Output()
	code := -1
	if e, ok := err.(*exec.ExitError); ok {
		code = e.ExitCode()
	}
	fmt.Printf("sh said %q, exit %d\n", strings.TrimSpace(string(out)), code)
	cmd := exec.Command("/usr/bin/sort")
	cmd.Stdin = strings.NewReader("b\nc\na\n")
	out, err = cmd.Output()
	check(err)
	fmt.Printf("sort: %q\n", out)
}

func files() {
	f, err := os.CreateTemp("", "yardstick")
	check(err)
	defer os.Remove(f.Name())
	var lines []string
	for i := 0; i < 100; i++ {
		lines = append(lines, fmt.Sprintf("%03d", (i*37)%100))
	}
	_, err = f.WriteString(strings.Join(lines, "\n"))
	check(err)
	check(f.Close())
	data, err := os.ReadFile(f.Name())
	check(err)
	got := strings.Split(string(data), "\n")
	sort.Strings(got)
	fmt.Println("file lines:", len(got), "first", got[0], "last", got[len(got)-1])
}

func check(err error) {
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
}

func main() {
	tcpEcho()
	httpRoundTrip()
	preemption()
	timersAndChannels()
	signals()
	processes()
	files()
	fmt.Println("done")
}
