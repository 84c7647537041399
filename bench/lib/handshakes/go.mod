module portico.bench/handshakes

go 1.21
