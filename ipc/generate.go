package ipc

// Regenerate ipc/pb from worker.proto. Prerequisites are listed in the
// package documentation (doc.go).
//go:generate protoc --proto_path=. --go_out=pb --go_opt=paths=source_relative --go-grpc_out=pb --go-grpc_opt=paths=source_relative worker.proto
