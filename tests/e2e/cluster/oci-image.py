#!/usr/bin/env python3
"""Writes a single-layer OCI image archive (an OCI image layout in a tar) from local files.

The equivalent of a `FROM scratch` Dockerfile with a few COPY lines, without a container
engine or any storage state: the output is byte-for-byte reproducible (fixed mtimes, sorted
entries) and `ctr images import` reads it directly.

  oci-image.py --name booster.local/x:1 --entrypoint /x --out x.tar x=/path/to/x [/etc/f=./f]
"""
import argparse
import gzip
import hashlib
import io
import json
import os
import tarfile


def add_dirs(tar, path, seen):
    parts = path.strip("/").split("/")[:-1]
    for i in range(1, len(parts) + 1):
        d = "/".join(parts[:i])
        if d not in seen:
            seen.add(d)
            info = tarfile.TarInfo(d)
            info.type = tarfile.DIRTYPE
            info.mode = 0o755
            tar.addfile(info)


def layer_bytes(files):
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        seen = set()
        for d in ("tmp",):
            seen.add(d)
            info = tarfile.TarInfo(d)
            info.type = tarfile.DIRTYPE
            info.mode = 0o1777
            tar.addfile(info)
        for dest, src in sorted(files):
            add_dirs(tar, dest, seen)
            with open(src, "rb") as f:
                data = f.read()
            info = tarfile.TarInfo(dest.strip("/"))
            info.size = len(data)
            info.mode = 0o755 if os.access(src, os.X_OK) else 0o644
            tar.addfile(info, io.BytesIO(data))
    return raw.getvalue()


def blob(out, data):
    digest = hashlib.sha256(data).hexdigest()
    info = tarfile.TarInfo("blobs/sha256/" + digest)
    info.size = len(data)
    info.mode = 0o644
    out.addfile(info, io.BytesIO(data))
    return "sha256:" + digest


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--name", required=True, help="image reference, e.g. booster.local/x:1")
    p.add_argument("--entrypoint", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("files", nargs="+", help="DEST=SRC: copy local SRC to DEST in the image")
    a = p.parse_args()
    files = []
    for spec in a.files:
        dest, _, src = spec.partition("=")
        if not src:
            p.error("expected DEST=SRC, got " + spec)
        files.append(("/" + dest.lstrip("/"), src))

    tar_data = layer_bytes(files)
    gz = io.BytesIO()
    with gzip.GzipFile(fileobj=gz, mode="wb", mtime=0) as g:
        g.write(tar_data)
    layer = gz.getvalue()
    diff_id = "sha256:" + hashlib.sha256(tar_data).hexdigest()
    config = {
        "architecture": "amd64",
        "os": "linux",
        "config": {"Entrypoint": [a.entrypoint], "Env": ["PATH=/"], "WorkingDir": "/"},
        "rootfs": {"type": "layers", "diff_ids": [diff_id]},
        "history": [{"created_by": "tests/e2e/cluster/oci-image.py"}],
    }
    tmp = a.out + ".tmp"
    with tarfile.open(tmp, "w") as out:
        config_data = json.dumps(config, sort_keys=True).encode()
        config_desc = {"mediaType": "application/vnd.oci.image.config.v1+json",
                       "digest": blob(out, config_data), "size": len(config_data)}
        layer_desc = {"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip",
                      "digest": blob(out, layer), "size": len(layer)}
        manifest = json.dumps({"schemaVersion": 2,
                               "mediaType": "application/vnd.oci.image.manifest.v1+json",
                               "config": config_desc, "layers": [layer_desc]},
                              sort_keys=True).encode()
        index = {"schemaVersion": 2, "manifests": [{
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "digest": blob(out, manifest), "size": len(manifest),
            "platform": {"architecture": "amd64", "os": "linux"},
            "annotations": {"io.containerd.image.name": a.name,
                            "org.opencontainers.image.ref.name": a.name.rsplit(":", 1)[-1]},
        }]}
        for name, obj in (("oci-layout", {"imageLayoutVersion": "1.0.0"}), ("index.json", index)):
            data = json.dumps(obj, sort_keys=True).encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = 0o644
            out.addfile(info, io.BytesIO(data))
    os.replace(tmp, a.out)
    print(f"{a.name}: {a.out} ({len(layer)} bytes compressed)")


if __name__ == "__main__":
    main()
