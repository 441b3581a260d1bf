module booster.local/e2e/workloads/httpserver

go 1.22
