//go:build unix

package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tessera-amt/tessera/internal/affinity"
	"github.com/tessera-amt/tessera/runtime"
)

// helperEnv switches the test binary into the helper program that run's
// tests start as localities.
const helperEnv = "TESSERA_RUN_TEST_HELPER"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "1" {
		os.Exit(helperMain(os.Args[1:]))
	}
	os.Exit(m.Run())
}

// helperMain is a locality. What it does depends on args[0]:
//
//	env               print its TESSERA_* variables and exit 0
//	fail L CODE       locality L exits CODE, the others sleep
//	selfkill L        locality L kills itself with SIGKILL, the others exit 0
//	orphan            start a process that keeps stdout and stderr and
//	                  sleeps, then exit 0
//	escape            the same, but the process leaves the process group
//	sleep             sleep 10 minutes
//	listener          locality 0 accepts a connection from every other
//	                  locality on the inherited root listener
//	trap              all but the last locality catch SIGTERM and exit 0;
//	                  every locality prints "ready" and waits
//	output            write awkward output: a long line, a last line
//	                  without a newline
//	affinity          print the CPUs it may run on
//	tessera fail L    a Tessera program (runtime.Main) whose body fails on
//	                  locality L; the others wait for the job to end
//	tessera die L     the same, but locality L kills itself with SIGKILL
func helperMain(args []string) int {
	loc, _ := strconv.Atoi(os.Getenv("TESSERA_LOCALITY"))
	n, _ := strconv.Atoi(os.Getenv("TESSERA_NUM_LOCALITIES"))
	arg := func(i int) int {
		v, err := strconv.Atoi(args[i])
		if err != nil {
			panic(err)
		}
		return v
	}
	switch args[0] {
	case "env":
		fmt.Printf("loc=%s n=%s secret=%s root=%s job=%s host=%s rootfd=%s gomaxprocs=%s\n",
			os.Getenv("TESSERA_LOCALITY"), os.Getenv("TESSERA_NUM_LOCALITIES"),
			os.Getenv("TESSERA_SECRET"), os.Getenv("TESSERA_ROOT_ADDR"),
			os.Getenv("TESSERA_JOB_ID"), os.Getenv("TESSERA_LISTEN_HOST"),
			os.Getenv("TESSERA_ROOT_FD"), os.Getenv("GOMAXPROCS"))
		return 0
	case "fail":
		fmt.Println("started")
		if loc == arg(1) {
			return arg(2)
		}
		time.Sleep(time.Minute)
		return 0
	case "selfkill":
		if loc == arg(1) {
			p, _ := os.FindProcess(os.Getpid())
			p.Kill()
			time.Sleep(time.Minute)
		}
		return 0
	case "orphan", "escape":
		exe, _ := os.Executable()
		cmd := exec.Command(exe, "sleep")
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		if args[0] == "escape" {
			cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		}
		if err := cmd.Start(); err != nil {
			fmt.Println("starting the orphan:", err)
			return 1
		}
		fmt.Println("orphan", cmd.Process.Pid)
		return 0
	case "sleep":
		time.Sleep(10 * time.Minute)
		return 0
	case "listener":
		return helperListener(loc, n)
	case "trap":
		sigs := make(chan os.Signal, 1)
		if loc < n-1 {
			signal.Notify(sigs, syscall.SIGTERM)
		}
		fmt.Println("ready")
		select {
		case s := <-sigs:
			fmt.Println("got", s)
			return 0
		case <-time.After(time.Minute):
			return 9
		}
	case "affinity":
		cpus, err := affinity.Allowed()
		if err != nil {
			fmt.Println("affinity:", err)
			return 1
		}
		fmt.Println(cpus)
		return 0
	case "tessera":
		return helperTessera(loc, args[1], arg(2))
	case "output":
		fmt.Print("first\nsecond\n")
		fmt.Fprintln(os.Stderr, strings.Repeat("y", 200<<10))
		fmt.Print("no newline at the end")
		return 0
	}
	fmt.Fprintf(os.Stderr, "helper: unknown mode %q\n", args)
	return 100
}

// helperListener checks the root listener: locality 0 must have it as fd 3
// and accept the others on it; no other locality may have inherited it.
func helperListener(loc, n int) int {
	root := os.Getenv("TESSERA_ROOT_ADDR")
	_, portStr, _ := net.SplitHostPort(root)
	port, _ := strconv.Atoi(portStr)
	// Getsockname looks at fd 3 without taking it over.
	sa, err := syscall.Getsockname(3)
	isRoot := err == nil
	if in4, ok := sa.(*syscall.SockaddrInet4); !ok || in4.Port != port {
		isRoot = false
	}
	if loc != 0 {
		if isRoot {
			fmt.Println("root listener leaked to fd 3")
			return 1
		}
		c, err := net.DialTimeout("tcp", root, 10*time.Second)
		if err != nil {
			fmt.Println("dial:", err)
			return 1
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(30 * time.Second))
		fmt.Fprintf(c, "hello from %d\n", loc)
		reply, err := bufio.NewReader(c).ReadString('\n')
		if err != nil || reply != "ok\n" {
			fmt.Printf("reply %q, %v\n", reply, err)
			return 1
		}
		fmt.Println("dial ok")
		return 0
	}

	if !isRoot || os.Getenv("TESSERA_ROOT_FD") != "3" {
		fmt.Printf("fd 3 is not the root listener: %v %v, TESSERA_ROOT_FD=%q\n", sa, err, os.Getenv("TESSERA_ROOT_FD"))
		return 1
	}
	f := os.NewFile(3, "root")
	ln, err := net.FileListener(f)
	f.Close()
	if err != nil {
		fmt.Println("FileListener:", err)
		return 1
	}
	defer ln.Close()
	if got := ln.Addr().String(); got != root {
		fmt.Printf("listener on %s, TESSERA_ROOT_ADDR=%s\n", got, root)
		return 1
	}
	ln.(*net.TCPListener).SetDeadline(time.Now().Add(30 * time.Second))
	for range n - 1 {
		c, err := ln.Accept()
		if err != nil {
			fmt.Println("accept:", err)
			return 1
		}
		c.SetDeadline(time.Now().Add(30 * time.Second))
		hello, err := bufio.NewReader(c).ReadString('\n')
		if err != nil || !strings.HasPrefix(hello, "hello from ") {
			fmt.Printf("hello %q, %v\n", hello, err)
			return 1
		}
		fmt.Fprint(c, "ok\n")
		c.Close()
	}
	fmt.Printf("listener ok, accepted %d\n", n-1)
	return 0
}

// helperCause is the error of helperTessera's failing locality.
const helperCause = `input.csv line 7: column 2: "abc" is not an integer`

// helperTessera is a Tessera program: once the job has started, locality
// l fails (mode fail) or dies (mode die); the others wait for the job to
// end.
func helperTessera(loc int, mode string, l int) int {
	return runtime.Main(runtime.Config{}, func(ctx context.Context, rt *runtime.Runtime) error {
		if loc == l {
			if mode == "die" {
				p, _ := os.FindProcess(os.Getpid())
				p.Kill()
				time.Sleep(time.Minute)
			}
			return fmt.Errorf("reading input: %s", helperCause)
		}
		<-ctx.Done()
		return context.Cause(ctx)
	})
}
