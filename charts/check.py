#!/usr/bin/env python3
"""Offline checks of the Helm chart (a unit test: no cluster needed).

Lints the chart, renders it under several value sets and asserts what users rely on:
the operator's flags follow its values, the RBAC is cluster-wide or namespaced as asked,
the PDB and ServiceMonitor appear only when they make sense, the dashboards are valid
JSON and every metric they query is one the code exports.

  charts/check.py [--helm charts/helm]
"""
import argparse
import glob
import json
import os
import re
import subprocess
import sys

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CHART = os.path.join(ROOT, "charts", "booster")
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what, file=sys.stderr)


def render(helm, *sets, namespace="booster-system", release="booster"):
    cmd = [helm, "template", release, CHART, "--namespace", namespace, "--include-crds",
           "--kube-version", "1.28.15"]
    for s in sets:
        cmd += ["--set", s]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return [d for d in yaml.safe_load_all(out) if d]


def render_error(helm, *sets):
    """The error of a render that must fail, or None when it renders."""
    cmd = [helm, "template", "booster", CHART, "--namespace", "booster-system",
           "--kube-version", "1.28.15"]
    for s in sets:
        cmd += ["--set", s]
    r = subprocess.run(cmd, capture_output=True, text=True)
    return None if r.returncode == 0 else r.stderr


def find(docs, kind, name=None):
    return [d for d in docs if d["kind"] == kind and (name is None or d["metadata"]["name"] == name)]


def operator_args(docs):
    dep = find(docs, "Deployment")
    check(len(dep) == 1, "exactly one Deployment is rendered")
    return dep[0]["spec"]["template"]["spec"]["containers"][0]["args"] if dep else []


def exported_metric_names():
    """Metric names registered in the C++ sources (prometheus-cpp .Name("...") and helpers)."""
    names = set()
    for folder in ("operator", "sidecar", "runtime", "common"):
        for path in glob.glob(os.path.join(ROOT, folder, "**", "*.cc"), recursive=True):
            if path.endswith("_test.cc"):
                continue
            with open(path, encoding="utf-8", errors="replace") as f:
                names.update(re.findall(r'"(booster_[a-z0-9_]+)"', f.read()))
    return names


# The Kubernetes API calls of the operator binary, read from its sources: every
# `client->Verb(kResource, ...)` (and `client.Verb`), plus list and watch for every
# informer process.cc starts. The kubectl plugin (operator/plugin) runs with its user's own
# credentials and is not the operator's RBAC.
CLIENT_VERBS = {"Get": ("get", ""), "List": ("list", ""), "ListEach": ("list", ""),
                "Watch": ("watch", ""), "Create": ("create", ""), "Update": ("update", ""),
                "UpdateStatus": ("update", "/status"), "Patch": ("patch", ""),
                "Delete": ("delete", ""), "GetScale": ("get", "/scale"),
                "UpdateScale": ("update", "/scale")}
# Granted without a call of ours: the API server's OwnerReferencesPermissionEnforcement
# admission (on in OpenShift and other hardened clusters) requires update on the owner's
# finalizers subresource to create the canary with an ownerReference that sets
# blockOwnerDeletion (operator/rollout/state_machine.cc, CanaryDeployment).
GRANTED_FOR_ADMISSION = {("booster.dev", "boosterprofiles/finalizers", "update")}


def api_calls():
    sources = [f for f in glob.glob(os.path.join(ROOT, "operator", "**", "*.cc"), recursive=True)
               if not f.endswith("_test.cc") and "/plugin/" not in f
               and not f.endswith(os.path.join("kube", "client.cc"))]
    headers = glob.glob(os.path.join(ROOT, "operator", "**", "*.h"), recursive=True)
    resources = {}
    for h in headers:
        with open(h) as f:
            for name, group, plural in re.findall(
                    r'inline const (?:kube::)?Resource (k\w+)\{\s*"([^"]*)",\s*"[^"]*",\s*"([^"]+)"',
                    f.read()):
                resources[name] = (group, plural)
    used = {}
    for src in sources:
        with open(src) as f:
            text = f.read()
        rel = os.path.relpath(src, ROOT)
        for verb, res in re.findall(
                r"\b(?:client_|client|c)(?:->|\.)(" + "|".join(CLIENT_VERBS) + r")\(\s*(?:kube::)?(k\w+)",
                text):
            check(res in resources, f"{rel}: {verb}({res}): unknown resource constant")
            if res not in resources:
                continue
            group, plural = resources[res]
            v, sub = CLIENT_VERBS[verb]
            used.setdefault((group, plural + sub, v), rel)
        if rel.endswith(os.path.join("controller", "process.cc")):
            for res in re.findall(
                    r"(?:\binformer\(|Informer>\(\s*\w+,)\s*(?:kube::)?(k\w+)", text):
                group, plural = resources[res]
                for v in ("list", "watch"):
                    used.setdefault((group, plural, v), rel + " (informer)")
    return used


def granted_rules(docs):
    out = set()
    for kind in ("ClusterRole", "Role"):
        for role in find(docs, kind):
            for rule in role.get("rules", []):
                out |= {(g, r, v) for g in rule["apiGroups"] for r in rule["resources"]
                        for v in rule["verbs"]}
    return out


# What each dashboard must show (docs/helm.md, Dashboards), beyond its metrics existing.
DASHBOARD_METRICS = {
    "operator.json": ("booster_operator_profile_phase", "booster_operator_reconcile_total",
                      "booster_operator_leader"),
    "arms.json": ("booster_pod_app_quantile", "booster_pod_cpu_cores",
                  "booster_operator_verdict_timestamp_seconds"),
    "agents.json": ("booster_agent_up", "booster_agent_info", "booster_operator_agent_streams",
                    "booster_agent_feedback_connected", "booster_agent_feedback_reconnects_total",
                    "booster_agent_sample_errors_total", "booster_agent_directive_failures_total",
                    "booster_agent_cpu_seconds_total", "booster_agent_resident_memory_bytes",
                    "booster_agent_knob_outcome"),
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--helm", default=os.path.join(ROOT, "charts", "helm"))
    helm = ap.parse_args().helm

    lint = subprocess.run([helm, "lint", "--strict", CHART], capture_output=True, text=True)
    check(lint.returncode == 0, "helm lint --strict passes:\n" + lint.stdout + lint.stderr)

    # Defaults: cluster-wide RBAC, two replicas with leader election, a PDB, dashboards.
    docs = render(helm)
    check(len(find(docs, "CustomResourceDefinition", "boosterprofiles.booster.dev")) == 1,
          "the chart carries the BoosterProfile CRD")
    with open(os.path.join(ROOT, "crds", "boosterprofile.yaml")) as f:
        check(find(docs, "CustomResourceDefinition") == [d for d in yaml.safe_load_all(f) if d],
              "the chart's CRDs are crds/boosterprofile.yaml's (the profile's and the two "
              "analysis templates')")
    args = operator_args(docs)
    for flag in ("--leader-elect=true", "--leader-election-namespace=booster-system",
                 "--agent-image=booster/agent:0.1.0", "--metrics-bind-address=0.0.0.0:8080",
                 "--health-probe-bind-address=0.0.0.0:8081"):
        check(flag in args, f"default args carry {flag}: {args}")
    check(not any(a.startswith("--namespace=") for a in args), "no --namespace by default")
    check(len(find(docs, "ClusterRole", "booster-operator")) == 1, "a ClusterRole by default")
    check(len(find(docs, "Role", "booster-operator-leader-election")) == 1,
          "a Role for the Lease")
    check(len(find(docs, "PodDisruptionBudget")) == 1, "a PDB with two replicas")
    check(not find(docs, "ServiceMonitor"), "no ServiceMonitor by default")
    svc = find(docs, "Service", "booster-operator")
    check(len(svc) == 1, "the Service is called booster-operator for release 'booster'")
    dep = find(docs, "Deployment")[0]
    pod = dep["spec"]["template"]["spec"]
    check(pod["securityContext"].get("runAsNonRoot") is True, "operator runs as non-root")
    c = pod["containers"][0]
    check(c["readinessProbe"]["httpGet"]["path"] == "/readyz", "readiness probe on /readyz")
    check(c["livenessProbe"]["httpGet"]["path"] == "/healthz", "liveness probe on /healthz")
    check(c["securityContext"]["readOnlyRootFilesystem"] is True, "read-only root")
    # Least privilege: the chart grants exactly what the code calls, verb by verb.
    granted = granted_rules(docs)
    used = api_calls()
    check(len(used) >= 15, f"found the operator's API calls in its sources: {sorted(used)}")
    for need, where in sorted(used.items()):
        check(need in granted, f"{where} calls {need}, which the chart's RBAC does not grant")
    for rule in sorted(granted - set(used) - GRANTED_FOR_ADMISSION):
        check(False, f"the chart grants {rule}, which no operator source calls")
    check(not any("*" in (g, r, v) for (g, r, v) in granted), "no wildcards")

    # The agents' feedback stream: TLS from a Secret the chart makes, mounted by the operator.
    for flag in ("--feedback-bind-address=0.0.0.0:9443",
                 "--feedback-cert-file=/etc/booster/feedback-tls/tls.crt",
                 "--feedback-key-file=/etc/booster/feedback-tls/tls.key"):
        check(flag in args, f"default args carry {flag}: {args}")
    tls = find(docs, "Secret", "booster-operator-feedback-tls")
    check(len(tls) == 1 and tls[0]["type"] == "kubernetes.io/tls" and
          set(tls[0]["data"]) == {"ca.crt", "tls.crt", "tls.key"},
          "a kubernetes.io/tls Secret with ca.crt, tls.crt and tls.key for the feedback server")
    mounts = c.get("volumeMounts", [])
    check(any(m["mountPath"] == "/etc/booster/feedback-tls" for m in mounts),
          "the operator mounts the feedback certificate")
    check(any(v.get("secret", {}).get("secretName") == "booster-operator-feedback-tls"
              for v in pod.get("volumes", [])), "from the chart's Secret")
    if tls:
        import base64
        import tempfile
        pem = base64.b64decode(tls[0]["data"]["tls.crt"])
        with tempfile.NamedTemporaryFile(suffix=".pem") as f:
            f.write(pem)
            f.flush()
            text = subprocess.run(["openssl", "x509", "-noout", "-text", "-in", f.name],
                                  capture_output=True, text=True).stdout
        check("DNS:booster-operator-feedback.booster-system.svc" in text,
              "the certificate names the Service the agents dial")
    # The agents are told where the server is and the CA to verify it with.
    for flag in ("--agent-feedback-address=booster-operator-feedback.booster-system.svc:9443",
                 "--agent-feedback-ca-file=/etc/booster/feedback-tls/ca.crt",
                 "--feedback-service=booster-system/booster-operator-feedback"):
        check(flag in args, f"default args carry {flag}: {args}")
    # Only the leader serves: the agents' Service has no selector, the leader writes its
    # EndpointSlice (operator/feedback/leader_endpoint.cc) with the Role below and POD_IP.
    fsvc = find(docs, "Service", "booster-operator-feedback")
    check(len(fsvc) == 1 and "selector" not in fsvc[0]["spec"] and
          fsvc[0]["spec"]["ports"][0]["name"] == "agents",
          "a selector-less Service for the agents with a port named agents")
    check(not any(p["name"] == "agents" for p in svc[0]["spec"]["ports"]) if svc else False,
          "the operator's own Service no longer sends agents to a standby")
    frole = find(docs, "Role", "booster-operator-feedback")
    check(len(frole) == 1 and frole[0]["rules"] == [
        {"apiGroups": ["discovery.k8s.io"], "resources": ["endpointslices"],
         "verbs": ["get", "create", "update"]}], "the Role lets the leader write that slice only")
    check(any(e["name"] == "POD_IP" for e in c["env"]), "the operator knows its pod IP")
    check(not find(docs, "PodMonitor"), "no PodMonitor by default")
    docs_ip = render(helm, "feedback.clusterIP=10.96.0.50", "feedback.agentAddress=10.96.0.50:9443")
    check("--agent-feedback-address=10.96.0.50:9443" in operator_args(docs_ip),
          "feedback.agentAddress is what the agents are told")
    check(find(docs_ip, "Service", "booster-operator-feedback")[0]["spec"].get("clusterIP") ==
          "10.96.0.50", "feedback.clusterIP fixes the agents' Service's address")
    tls_ip = find(docs_ip, "Secret", "booster-operator-feedback-tls")
    if tls_ip:
        import base64
        import tempfile
        with tempfile.NamedTemporaryFile(suffix=".pem") as f:
            f.write(base64.b64decode(tls_ip[0]["data"]["tls.crt"]))
            f.flush()
            text = subprocess.run(["openssl", "x509", "-noout", "-text", "-in", f.name],
                                  capture_output=True, text=True).stdout
        check("IP Address:10.96.0.50" in text, "the certificate names a fixed ClusterIP")
    pm = find(render(helm, "podMonitor.enabled=true"), "PodMonitor", "booster-operator-agents")
    check(len(pm) == 1, "podMonitor.enabled=true: a PodMonitor for the agents")
    if pm:
        ep = pm[0]["spec"]["podMetricsEndpoints"][0]
        check(ep["port"] == "booster-agent" and ep["path"] == "/metrics",
              "the PodMonitor scrapes the agent's named port (operator/rollout/pod_template.h)")
        check(pm[0]["spec"]["selector"]["matchExpressions"][0]["key"] == "booster.dev/arm",
              "the PodMonitor selects enrolled pods by booster.dev/arm")
    docs_off = render(helm, "feedback.enabled=false")
    check(not any(a.startswith("--feedback") for a in operator_args(docs_off)),
          "feedback.enabled=false: no feedback flags")
    check(not find(docs_off, "Secret"), "feedback.enabled=false: no Secret")
    check(not find(docs_off, "Service", "booster-operator-feedback") and
          not find(docs_off, "Role", "booster-operator-feedback"),
          "feedback.enabled=false: no agents' Service and no Role for it")
    docs_own = render(helm, "feedback.tls.secretName=my-cert")
    check(not find(docs_own, "Secret"), "a certificate of one's own: the chart makes none")
    own_pod = find(docs_own, "Deployment")[0]["spec"]["template"]["spec"]
    check(any(v.get("secret", {}).get("secretName") == "my-cert" for v in own_pod["volumes"]),
          "and mounts that Secret")

    # Prometheus metrics (docs/prometheus-metrics.md): nothing without an address; with one,
    # the address and the timeout, and the CA and token Secrets mounted read-only where their
    # flags point, one key each.
    check(not any(a.startswith("--prometheus") for a in args),
          f"no --prometheus flags by default: {args}")
    check(not any(v["name"].startswith("prometheus") for v in pod.get("volumes", [])),
          "no Prometheus volumes by default")
    docs_prom = render(helm, "operator.prometheus.address=https://prom.monitoring.svc:9090/prom",
                       "operator.prometheus.caSecret=prom-ca",
                       "operator.prometheus.bearerTokenSecret.name=prom-token",
                       "operator.prometheus.bearerTokenSecret.key=bearer",
                       "operator.prometheus.timeout=3s")
    args_prom = operator_args(docs_prom)
    for flag in ("--prometheus-address=https://prom.monitoring.svc:9090/prom",
                 "--prometheus-timeout=3s",
                 "--prometheus-ca-file=/etc/booster/prometheus-ca/ca.crt",
                 "--prometheus-bearer-token-file=/etc/booster/prometheus-token/bearer"):
        check(flag in args_prom, f"operator.prometheus.* set: args carry {flag}: {args_prom}")
    pod_prom = find(docs_prom, "Deployment")[0]["spec"]["template"]["spec"]
    mounts_prom = {m["mountPath"]: m for m in pod_prom["containers"][0].get("volumeMounts", [])}
    volumes_prom = {v["name"]: v for v in pod_prom.get("volumes", [])}
    check("/etc/booster/feedback-tls" in mounts_prom, "the feedback certificate is still mounted")
    for flag, secret, key in (("--prometheus-ca-file", "prom-ca", "ca.crt"),
                              ("--prometheus-bearer-token-file", "prom-token", "bearer")):
        path = next((a.split("=", 1)[1] for a in args_prom if a.startswith(flag + "=")), "")
        directory, file = os.path.split(path)
        m = mounts_prom.get(directory)
        check(m is not None and m.get("readOnly") is True,
              f"{flag}'s directory {directory} is a read-only mount: {sorted(mounts_prom)}")
        v = volumes_prom.get(m["name"]) if m else None
        check(v is not None and v.get("secret") == {
            "secretName": secret, "items": [{"key": key, "path": file}]},
              f"{flag}={path} is key {key} of Secret {secret}: {v}")
    docs_addr = render(helm, "operator.prometheus.address=http://prometheus.monitoring:9090")
    args_addr = operator_args(docs_addr)
    check([a for a in args_addr if a.startswith("--prometheus")] ==
          ["--prometheus-address=http://prometheus.monitoring:9090", "--prometheus-timeout=5s"],
          f"an address alone: the address and the default timeout, no CA, no token: {args_addr}")
    docs_noaddr = render(helm, "operator.prometheus.caSecret=prom-ca",
                         "operator.prometheus.bearerTokenSecret.name=prom-token")
    pod_noaddr = find(docs_noaddr, "Deployment")[0]["spec"]["template"]["spec"]
    check(not any(a.startswith("--prometheus") for a in operator_args(docs_noaddr)) and
          [v["name"] for v in pod_noaddr.get("volumes", [])] == ["feedback-tls"],
          "the CA and token Secrets without an address: no flag and no mount")
    docs_nofb = render(helm, "feedback.enabled=false",
                       "operator.prometheus.address=https://prom:9090",
                       "operator.prometheus.caSecret=prom-ca")
    pod_nofb = find(docs_nofb, "Deployment")[0]["spec"]["template"]["spec"]
    check([m["mountPath"] for m in pod_nofb["containers"][0].get("volumeMounts", [])] ==
          ["/etc/booster/prometheus-ca"] and
          [v["name"] for v in pod_nofb.get("volumes", [])] == ["prometheus-ca"],
          "feedback off, a Prometheus CA: its mount alone")
    err = render_error(helm, "operator.prometheus.address=prometheus:9090")
    check(err is not None and 'operator.prometheus.address "prometheus:9090"' in err,
          f"an address without http(s):// is refused at render: {err}")

    # No NetworkPolicy by default; when asked, the agents' port from any namespace, health
    # from anywhere, metrics only from the namespaces given; metrics can stay in the pod.
    check(not find(docs, "NetworkPolicy"), "no NetworkPolicy by default")
    check("--metrics-bind-address=0.0.0.0:8080" in args, f"metrics on every interface: {args}")
    docs_np = render(helm, "networkPolicy.enabled=true", "service.metricsBindHost=127.0.0.1",
                     "networkPolicy.metricsFrom[0].namespaceSelector.matchLabels.team=obs")
    np = find(docs_np, "NetworkPolicy", "booster-operator")
    check(len(np) == 1, "networkPolicy.enabled renders one NetworkPolicy")
    if np:
        rules = np[0]["spec"]["ingress"]
        ports = [[p["port"] for p in r["ports"]] for r in rules]
        check(ports == [[9443], [8081], [8080]], f"ingress on agents, health, metrics: {ports}")
        check(rules[0]["from"] == [{"namespaceSelector": {}}], "agents from every namespace")
        check("from" not in rules[1], "health from anywhere (the kubelet)")
        check(rules[2]["from"] == [{"namespaceSelector": {"matchLabels": {"team": "obs"}}}],
              f"metrics only from metricsFrom: {rules[2].get('from')}")
        # values.yaml (operator.prometheus) says the chart leaves egress alone: the API
        # server and a Prometheus anywhere stay reachable.
        check(np[0]["spec"]["policyTypes"] == ["Ingress"] and "egress" not in np[0]["spec"],
              f"the NetworkPolicy restricts ingress only: {np[0]['spec'].get('policyTypes')}")
    check("--metrics-bind-address=127.0.0.1:8080" in operator_args(docs_np),
          "service.metricsBindHost binds /metrics to localhost")

    # Namespaces opt in: by the label by default, by name when listed.
    check("--namespace-label=booster.dev/enabled" in args,
          f"namespaces opt in by label by default: {args}")
    docs_list = render(helm, "operator.enabledNamespaces={shop,web}", "operator.namespaceLabel=")
    args_list = operator_args(docs_list)
    check("--enabled-namespaces=shop,web" in args_list and
          not any(a.startswith("--namespace-label") for a in args_list),
          f"enabledNamespaces lists them and an empty label turns the label off: {args_list}")
    check(("", "namespaces", "list") not in granted_rules(docs_list),
          "no namespaces rule without the label")

    # One namespace: the RBAC follows.
    docs = render(helm, "operator.watchNamespace=shop")
    check("--namespace=shop" in operator_args(docs), "--namespace follows watchNamespace")
    check(not any(a.startswith("--namespace-label") for a in operator_args(docs)),
          "watching one namespace, the label is not read (that namespace has opted in)")
    check(("", "namespaces", "list") not in granted_rules(docs),
          "and no rule on namespaces (cluster-scoped) in that mode")
    role = find(docs, "Role", "booster-operator")
    check(len(role) == 1 and role[0]["metadata"]["namespace"] == "shop",
          "watchNamespace gives a Role in that namespace")
    check(not find(docs, "ClusterRole", "booster-operator"), "and no ClusterRole")

    # One replica without leader election: no PDB, no Lease Role.
    docs = render(helm, "operator.replicas=1", "operator.leaderElection.enabled=false")
    check(not find(docs, "PodDisruptionBudget"), "no PDB with one replica")
    check("--leader-elect=false" in operator_args(docs), "--leader-elect follows its value")
    check(not find(docs, "Role", "booster-operator-leader-election"), "no Lease Role")

    # Another release name, a ServiceMonitor, dashboards off, a pinned image.
    docs = render(helm, "serviceMonitor.enabled=true", "dashboards.enabled=false",
                  "operator.image.tag=1.2.3", release="perf")
    sm = find(docs, "ServiceMonitor", "perf-booster-operator")
    check(len(sm) == 1, "ServiceMonitor named after the release")
    check(bool(sm) and sm[0]["spec"]["endpoints"][0].get("honorLabels") is True,
          "the ServiceMonitor keeps the operator's namespace label (honorLabels)")
    check(not find(docs, "ConfigMap"), "no dashboards when disabled")
    image = find(docs, "Deployment")[0]["spec"]["template"]["spec"]["containers"][0]["image"]
    check(image == "booster/operator:1.2.3", f"image tag follows its value: {image}")

    # Dashboards: valid JSON, unique uids, every metric they query (panels, annotations and
    # template variables) is exported by the code, and each shows what docs/helm.md says.
    docs = render(helm)
    maps = find(docs, "ConfigMap")
    boards = glob.glob(os.path.join(CHART, "dashboards", "*.json"))
    check(len(maps) == len(boards) >= 3, "one ConfigMap per dashboard")
    check({os.path.basename(b) for b in boards} >= set(DASHBOARD_METRICS),
          f"the chart ships {sorted(DASHBOARD_METRICS)}")
    exported = exported_metric_names()
    uids = set()
    for path in boards:
        name = os.path.basename(path)
        with open(path) as f:
            board = json.load(f)
        check(board["uid"] not in uids, f"unique dashboard uid {board['uid']}")
        uids.add(board["uid"])
        queried = set()

        def metrics_of(expr, where):
            for m in re.findall(r"\b(booster_[a-z0-9_]+)", expr):
                base = re.sub(r"_(bucket|sum|count)$", "", m)
                check(base in exported, f"{name} {where} queries {m}, which no source file exports")
                queried.add(base)

        ids = [p["id"] for p in board["panels"]]
        check(len(ids) == len(set(ids)), f"{name}: unique panel ids {ids}")
        for p in board["panels"]:
            check(p["targets"], f"{name} panel '{p['title']}' has a query")
            g = p["gridPos"]
            check(0 <= g["x"] and g["x"] + g["w"] <= 24, f"{name} panel '{p['title']}' fits 24 columns")
            for t in p["targets"]:
                metrics_of(t["expr"], f"panel '{p['title']}'")
        for a in board.get("annotations", {}).get("list", []):
            if "expr" not in a:
                continue
            metrics_of(a["expr"], f"annotation '{a['name']}'")
            # Grafana reads a series value used as the time in milliseconds.
            if a.get("useValueForTime"):
                check(a["expr"].rstrip().endswith("* 1000") and "_timestamp_seconds" in a["expr"],
                      f"{name} annotation '{a['name']}': a seconds timestamp times 1000")
        for v in board["templating"]["list"]:
            if v.get("type") == "query":
                metrics_of(v["definition"], f"variable '{v['name']}'")
        for m in DASHBOARD_METRICS.get(name, ()):
            check(m in queried, f"{name} shows {m}")
    with open(os.path.join(CHART, "dashboards", "arms.json")) as f:
        arms = json.load(f)
    check(any("booster_operator_verdict_timestamp_seconds" in a.get("expr", "")
              for a in arms["annotations"]["list"]),
          "the baseline-vs-canary dashboard shows the verdicts as annotations")
    if failures:
        print(f"charts/check.py: {len(failures)} check(s) failed", file=sys.stderr)
        return 1
    print("charts/check.py: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
