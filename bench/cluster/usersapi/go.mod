module booster.local/bench/cluster/usersapi

go 1.22
