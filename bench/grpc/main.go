// grpcbench-server: the gRPC server behind bench/grpc.sh, and a small client that checks a
// proxy in front of it.
//
//	grpcbench-server -listen 127.0.0.1:PORT        serve bench.Bench (bench.proto) over h2c
//	grpcbench-server -check 127.0.0.1:PORT         call each method once through ADDR and
//	                                               exit 1 unless every answer is right
//
// There is no generated code: the three message types of bench.proto have one or three
// scalar fields, so they are encoded and decoded with protowire, and a codec named "proto"
// hands the handlers the raw message bytes. On the wire it is ordinary protobuf over gRPC.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/encoding"
	"google.golang.org/protobuf/encoding/protowire"
)

// rawCodec passes message bytes through unchanged; it replaces the "proto" codec on both
// ends, so the content type stays application/grpc+proto (or application/grpc).
type rawCodec struct{}

type frame struct{ b []byte }

func (rawCodec) Marshal(v any) ([]byte, error) {
	f, ok := v.(*frame)
	if !ok {
		return nil, fmt.Errorf("rawCodec: cannot marshal %T", v)
	}
	return f.b, nil
}

func (rawCodec) Unmarshal(data []byte, v any) error {
	f, ok := v.(*frame)
	if !ok {
		return fmt.Errorf("rawCodec: cannot unmarshal into %T", v)
	}
	f.b = append(f.b[:0], data...)
	return nil
}

func (rawCodec) Name() string { return "proto" }

var _ encoding.Codec = rawCodec{}

// fields reads the string field 1 and the varint fields 2 and 3 of a message, skipping
// any other field.
func fields(b []byte) (name string, f2, f3 int64, err error) {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return "", 0, 0, protowire.ParseError(n)
		}
		b = b[n:]
		switch {
		case num == 1 && typ == protowire.BytesType:
			v, m := protowire.ConsumeBytes(b)
			if m < 0 {
				return "", 0, 0, protowire.ParseError(m)
			}
			name, b = string(v), b[m:]
		case (num == 2 || num == 3) && typ == protowire.VarintType:
			v, m := protowire.ConsumeVarint(b)
			if m < 0 {
				return "", 0, 0, protowire.ParseError(m)
			}
			if num == 2 {
				f2 = int64(int32(v))
			} else {
				f3 = int64(int32(v))
			}
			b = b[m:]
		default:
			m := protowire.ConsumeFieldValue(num, typ, b)
			if m < 0 {
				return "", 0, 0, protowire.ParseError(m)
			}
			b = b[m:]
		}
	}
	return name, f2, f3, nil
}

// message encodes a HelloRequest or HelloReply: field 1, a string.
func message(s string) *frame {
	b := protowire.AppendTag(nil, 1, protowire.BytesType)
	return &frame{protowire.AppendString(b, s)}
}

// streamRequest encodes a StreamRequest.
func streamRequest(name string, count, size int32) *frame {
	f := message(name)
	f.b = protowire.AppendTag(f.b, 2, protowire.VarintType)
	f.b = protowire.AppendVarint(f.b, uint64(count))
	f.b = protowire.AppendTag(f.b, 3, protowire.VarintType)
	f.b = protowire.AppendVarint(f.b, uint64(size))
	return f
}

func hello(name string, size int64) string {
	s := "hello " + name
	if int64(len(s)) < size {
		s += strings.Repeat("x", int(size)-len(s))
	}
	return s
}

// The most replies one Stream call may ask for, and the largest reply.
const maxCount, maxSize = 1 << 20, 4 << 20

func sayHello(_ any, _ context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
	var in frame
	if err := dec(&in); err != nil {
		return nil, err
	}
	name, _, _, err := fields(in.b)
	if err != nil {
		return nil, err
	}
	return message(hello(name, 0)), nil
}

func stream(_ any, ss grpc.ServerStream) error {
	var in frame
	if err := ss.RecvMsg(&in); err != nil {
		return err
	}
	name, count, size, err := fields(in.b)
	if err != nil {
		return err
	}
	if count < 0 || count > maxCount || size < 0 || size > maxSize {
		return fmt.Errorf("count %d or size %d out of range", count, size)
	}
	reply := message(hello(name, size))
	for i := int64(0); i < count; i++ {
		if err := ss.SendMsg(reply); err != nil {
			return err
		}
	}
	return nil
}

func chat(_ any, ss grpc.ServerStream) error {
	var in frame
	for {
		if err := ss.RecvMsg(&in); err == io.EOF {
			return nil
		} else if err != nil {
			return err
		}
		name, _, _, err := fields(in.b)
		if err != nil {
			return err
		}
		if err := ss.SendMsg(message(hello(name, 0))); err != nil {
			return err
		}
	}
}

var benchService = grpc.ServiceDesc{
	ServiceName: "bench.Bench",
	HandlerType: (*any)(nil),
	Methods:     []grpc.MethodDesc{{MethodName: "SayHello", Handler: sayHello}},
	Streams: []grpc.StreamDesc{
		{StreamName: "Stream", Handler: stream, ServerStreams: true},
		{StreamName: "Chat", Handler: chat, ServerStreams: true, ClientStreams: true},
	},
	Metadata: "bench.proto",
}

func serve(addr string) error {
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := grpc.NewServer(grpc.ForceServerCodec(rawCodec{}), grpc.MaxConcurrentStreams(1000))
	srv.RegisterService(&benchService, nil)
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT, syscall.SIGQUIT)
	go func() {
		<-stop
		srv.Stop()
	}()
	log.Printf("serving bench.Bench on %s", lis.Addr())
	return srv.Serve(lis)
}

// check calls each method once through addr and returns an error unless every reply is
// the expected one.
func check(addr string) error {
	conn, err := grpc.NewClient(addr,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.ForceCodec(rawCodec{})))
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	var out frame
	if err := conn.Invoke(ctx, "/bench.Bench/SayHello", message("check"), &out); err != nil {
		return fmt.Errorf("SayHello: %w", err)
	}
	if got, _, _, _ := fields(out.b); got != "hello check" {
		return fmt.Errorf("SayHello answered %q", got)
	}

	const count, size = 50, 1000
	st, err := conn.NewStream(ctx, &benchService.Streams[0], "/bench.Bench/Stream")
	if err != nil {
		return fmt.Errorf("Stream: %w", err)
	}
	if err := st.SendMsg(streamRequest("check", count, size)); err != nil {
		return fmt.Errorf("Stream: send: %w", err)
	}
	if err := st.CloseSend(); err != nil {
		return fmt.Errorf("Stream: close: %w", err)
	}
	want := hello("check", size)
	n := 0
	for {
		err := st.RecvMsg(&out)
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("Stream: reply %d: %w", n, err)
		}
		if got, _, _, _ := fields(out.b); got != want {
			return fmt.Errorf("Stream: reply %d is %d bytes, not the %d expected", n, len(got), len(want))
		}
		n++
	}
	if n != count {
		return fmt.Errorf("Stream: %d replies, expected %d", n, count)
	}

	ch, err := conn.NewStream(ctx, &benchService.Streams[1], "/bench.Bench/Chat")
	if err != nil {
		return fmt.Errorf("Chat: %w", err)
	}
	for i := 0; i < 3; i++ {
		name := fmt.Sprintf("check%d", i)
		if err := ch.SendMsg(message(name)); err != nil {
			return fmt.Errorf("Chat: send %d: %w", i, err)
		}
		if err := ch.RecvMsg(&out); err != nil {
			return fmt.Errorf("Chat: reply %d: %w", i, err)
		}
		if got, _, _, _ := fields(out.b); got != "hello "+name {
			return fmt.Errorf("Chat: reply %d is %q", i, got)
		}
	}
	if err := ch.CloseSend(); err != nil {
		return fmt.Errorf("Chat: close: %w", err)
	}
	if err := ch.RecvMsg(&out); !errors.Is(err, io.EOF) {
		return fmt.Errorf("Chat: expected the end of the stream, got %v", err)
	}
	return nil
}

func main() {
	listen := flag.String("listen", "", "serve on this address (host:port)")
	checkAddr := flag.String("check", "", "check a server or proxy at this address and exit")
	flag.Parse()
	switch {
	case *checkAddr != "":
		if err := check(*checkAddr); err != nil {
			fmt.Fprintln(os.Stderr, "check failed:", err)
			os.Exit(1)
		}
	case *listen != "":
		if err := serve(*listen); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
			log.Fatal(err)
		}
	default:
		flag.Usage()
		os.Exit(2)
	}
}
