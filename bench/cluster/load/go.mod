module booster.local/bench/cluster/load

go 1.22
