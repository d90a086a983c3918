package ipc

// Regenerate ipc/internal/pb from worker.proto. Prerequisites are listed in the
// package documentation (doc.go).
//go:generate protoc --proto_path=. --go_out=internal/pb --go_opt=paths=source_relative --go-grpc_out=internal/pb --go-grpc_opt=paths=source_relative worker.proto
