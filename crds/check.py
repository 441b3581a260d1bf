#!/usr/bin/env python3
"""Checks crds/boosterprofile.yaml: the BoosterProfile CRD, then the two analysis template
CRDs (BoosterAnalysisTemplate, BoosterClusterAnalysisTemplate), whose spec.analysis is the
profile's spec.rollout.analysis without templateRef (and without the leading
`has(self.templateRef) || ` of analysis' CEL rules: a template is always complete).
`--write-templates` writes those two from the profile's schema; offline, the file must hold
exactly what it would write.

Offline (always): the structural-schema rules the API server enforces on a CRD (every
node typed, no `properties` next to `additionalProperties`, required fields declared,
defaults and enums of the node's type, printer columns pointing at schema fields), that
the agent metric names in the CEL rules of spec.rollout.analysis and its metrics[] (and in
the message and description that list them) are the operator's table of metrics
(operator/rollout/profile/metric_names.h, read with a regex), and that every example and
every testdata profile matches the schema's types, enums, ranges and patterns. CEL rules
are not evaluated offline.

With --cluster (KUBECONFIG must point at a cluster): applies the CRD, then
  - examples/*.yaml must pass a server-side dry run,
  - crds/testdata/invalid/*.yaml must be rejected, with the text of their '# expect:' line,
  - crds/testdata/semantic/*.yaml must be accepted (the operator rejects them instead),
and creates the examples in a scratch namespace to show the printer columns and defaults.

  crds/check.py                 # offline
  crds/check.py --cluster       # also against the API server
  crds/check.py --write-templates   # after an edit of the profile's analysis schema
"""
import argparse
import copy
import glob
import os
import re
import subprocess
import sys

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CRD = os.path.join(ROOT, "crds", "boosterprofile.yaml")
METRIC_NAMES = os.path.join(ROOT, "operator", "rollout", "profile", "metric_names.h")

problems = []


def problem(msg):
    problems.append(msg)
    print("FAIL " + msg)


def walk(node, path):
    """Structural-schema rules, after apiextensions' structural validation."""
    if not isinstance(node, dict):
        problem(f"{path}: schema node is not a map")
        return
    typed = ("type" in node or node.get("x-kubernetes-int-or-string")
             or node.get("x-kubernetes-preserve-unknown-fields"))
    if not typed:
        problem(f"{path}: no type")
    if "properties" in node and "additionalProperties" in node:
        problem(f"{path}: properties and additionalProperties together")
    if node.get("x-kubernetes-int-or-string") and "type" in node:
        problem(f"{path}: int-or-string must not set type")
    for req in node.get("required", []):
        if req not in node.get("properties", {}):
            problem(f"{path}: required field {req} not declared")
    t = node.get("type")
    for value in node.get("enum", []):
        if not matches_type(value, t):
            problem(f"{path}: enum value {value!r} is not a {t}")
    if "default" in node:
        errs = []
        validate(node["default"], node, path + ".default", errs)
        for e in errs:
            problem(f"{path}: default does not validate: {e}")
    for rule in node.get("x-kubernetes-validations", []):
        if "rule" not in rule or "message" not in rule:
            problem(f"{path}: a CEL rule needs rule and message")
    for key, child in node.get("properties", {}).items():
        walk(child, f"{path}.{key}")
    if isinstance(node.get("additionalProperties"), dict):
        walk(node["additionalProperties"], f"{path}[*]")
    if "items" in node:
        walk(node["items"], f"{path}[]")
    if t == "array" and "items" not in node:
        problem(f"{path}: array without items")


def matches_type(value, t):
    return {
        "string": isinstance(value, str),
        "integer": isinstance(value, int) and not isinstance(value, bool),
        "number": isinstance(value, (int, float)) and not isinstance(value, bool),
        "boolean": isinstance(value, bool),
        "object": isinstance(value, dict),
        "array": isinstance(value, list),
    }.get(t, True)


def validate(value, schema, path, errs):
    """The OpenAPI subset the CRD uses: type, enum, min/max, lengths, pattern, required."""
    if schema.get("x-kubernetes-int-or-string"):
        if not (isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))):
            errs.append(f"{path}: must be an integer or a string")
        return
    t = schema.get("type")
    if t and not matches_type(value, t):
        errs.append(f"{path}: {value!r} is not a {t}")
        return
    if "enum" in schema and value not in schema["enum"]:
        errs.append(f"{path}: {value!r} not in {schema['enum']}")
    if "minimum" in schema and value < schema["minimum"]:
        errs.append(f"{path}: {value} < {schema['minimum']}")
    if "maximum" in schema and value > schema["maximum"]:
        errs.append(f"{path}: {value} > {schema['maximum']}")
    if t == "string":
        if "pattern" in schema and not re.search(schema["pattern"], value):
            errs.append(f"{path}: {value!r} does not match {schema['pattern']}")
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            errs.append(f"{path}: longer than {schema['maxLength']}")
        if "minLength" in schema and len(value) < schema["minLength"]:
            errs.append(f"{path}: shorter than {schema['minLength']}")
    if t == "array":
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            errs.append(f"{path}: more than {schema['maxItems']} items")
        if "minItems" in schema and len(value) < schema["minItems"]:
            errs.append(f"{path}: fewer than {schema['minItems']} items")
        for i, v in enumerate(value):
            validate(v, schema.get("items", {}), f"{path}[{i}]", errs)
    if t == "object":
        for req in schema.get("required", []):
            if req not in value:
                errs.append(f"{path}.{req}: required")
        props = schema.get("properties", {})
        extra = schema.get("additionalProperties")
        if "maxProperties" in schema and len(value) > schema["maxProperties"]:
            errs.append(f"{path}: more than {schema['maxProperties']} entries")
        for k, v in value.items():
            if k in props:
                validate(v, props[k], f"{path}.{k}", errs)
            elif isinstance(extra, dict):
                validate(v, extra, f"{path}[{k}]", errs)
            elif path not in ("", ".metadata") and not schema.get(
                    "x-kubernetes-preserve-unknown-fields"):
                # metadata's other fields (labels, annotations) are the API server's own.
                errs.append(f"{path}.{k}: unknown field (the API server would prune it)")


def schema_has(schema, json_path):
    node = schema
    for part in json_path.strip(".").split("."):
        props = node.get("properties", {})
        if part not in props:
            return part == "creationTimestamp"  # metadata is the server's
        node = props[part]
    return True


def header_metric_names(path):
    """The names of the rows of kMetrics in metric_names.h, in order; None if no table."""
    with open(path) as f:
        text = f.read()
    table = re.search(r"\bkMetrics\s*=\s*std::to_array<MetricName>\(\{(.*?)\n\}\);", text, re.S)
    if table is None:
        return None
    body = re.sub(r"//[^\n]*", "", table.group(1))
    return re.findall(r'\{\s*"(\w+)"\s*,\s*Direction::k(?:Lower|Higher)IsBetter\s*\}', body)


# The CEL rules that list the agent's metrics (an agent metric has one of these names and
# no direction; a prometheus metric any other name): where they are (on a metrics entry, or
# on analysis over the whole list), a pattern with the list in brackets, and whether the
# rule's message lists them too. The entry's rules hold for a partial entry that overrides a
# template's metric; analysis' rules, which a profile naming a template skips, for a
# complete one.
METRIC_NAME_RULES = (
    ("metrics[]", "a prometheus metric's name",
     r"^!has\(self\.prometheus\) \|\| !\(self\.name in \[(.*)\]\)$", False),
    ("metrics[]", "an agent metric's lack of direction",
     r"^!has\(self\.direction\) \|\| !\(self\.name in \[(.*)\]\)$", False),
    ("", "an agent metric's name",
     r"^has\(self\.templateRef\) \|\| !has\(self\.metrics\) \|\| "
     r"self\.metrics\.all\(m, has\(m\.prometheus\) \|\| m\.name in \[(.*)\]\)$", True),
)


def cel_string_list(text):
    """['a', 'b'] of a CEL list literal of single- or double-quoted strings; None otherwise."""
    items = [i.strip() for i in text.split(",")]
    out = []
    for i in items:
        m = re.fullmatch(r"'(\w+)'|\"(\w+)\"", i)
        if m is None:
            return None
        out.append(m.group(1) or m.group(2))
    return out


def check_metric_names(schema):
    """The agent metric names of the CRD's CEL rules on spec.rollout.analysis and its
    metrics[] and the operator's table (which the parser, the judge and the feedback server
    use) must list the same names in the same order: the rules, and the message and the
    description of name that list them."""
    rel = os.path.relpath(METRIC_NAMES, ROOT)
    names = header_metric_names(METRIC_NAMES)
    if not names:
        problem(f"{rel}: no rows of kMetrics found")
        return
    analysis = schema
    for key in ("spec", "rollout", "analysis"):
        analysis = analysis["properties"][key]
    item = analysis["properties"]["metrics"]["items"]
    where = "spec.rollout.analysis.metrics[]"
    before = len(problems)
    if "enum" in item["properties"]["name"]:
        problem(f"{where}.name has an enum: a prometheus metric's name is the team's own; the "
                "agent's names belong in the CEL rules")
    listed = f"({', '.join(names)})"
    if listed not in " ".join(item["properties"]["name"].get("description", "").split()):
        problem(f"{where}.name: the description does not list {listed}")
    for on, what, pattern, message_lists in METRIC_NAME_RULES:
        node = item if on else analysis
        at = "spec.rollout.analysis" + ("." + on if on else "")
        rules = node.get("x-kubernetes-validations", [])
        found = [(r, re.match(pattern, " ".join(r.get("rule", "").split()))) for r in rules]
        found = [(r, m) for r, m in found if m]
        if len(found) != 1:
            problem(f"{at}: {len(found)} CEL rules for {what} (want exactly one matching "
                    f"{pattern!r})")
            continue
        rule, m = found[0]
        crd = cel_string_list(m.group(1))
        if crd != names:
            crd = crd or []
            missing = [n for n in names if n not in crd]
            extra = [n for n in crd if n not in names]
            why = (f"not in the CRD: {missing}; not in {rel}: {extra}" if missing or extra
                   else "the same names in another order")
            problem(f"{at}: the CEL rule for {what} lists {crd}, not {rel}'s {names} ({why})")
        if message_lists and listed not in " ".join(rule.get("message", "").split()):
            problem(f"{at}: the message of the CEL rule for {what} does not list "
                    f"{listed}: {rule.get('message')!r}")
    if len(problems) == before:
        print(f"offline: the CRD's CEL rules list the {len(names)} metric names of {rel}")


TEMPLATE_HEADER = """
# The shared analysis templates (docs/analysis-templates.md): written by
# `crds/check.py --write-templates` from the BoosterProfile's spec.rollout.analysis above;
# edit that, not these.
"""
TEMPLATES = (("BoosterAnalysisTemplate", "boosteranalysistemplates", "Namespaced", "bat",
              "in its namespace"),
             ("BoosterClusterAnalysisTemplate", "boosterclusteranalysistemplates", "Cluster",
              "bcat", "in every namespace"))


# A rule of the profile's analysis that a profile naming a template skips (its metrics
# may be partial overrides; the operator validates the merged result). A template has no
# templateRef and is always complete: it gets the rule without this prefix (a rule on a
# field the schema lacks would not compile).
SKIPPED_WITH_TEMPLATE = "has(self.templateRef) || "


def template_crds(profile):
    """The two template CRDs, their analysis schema taken from the profile's."""
    schema = profile["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    analysis = copy.deepcopy(
        schema["properties"]["spec"]["properties"]["rollout"]["properties"]["analysis"])
    del analysis["properties"]["templateRef"]
    analysis.pop("default", None)
    analysis["minProperties"] = 1
    for rule in analysis.get("x-kubernetes-validations", []):
        text = " ".join(rule["rule"].split())
        if text.startswith(SKIPPED_WITH_TEMPLATE):
            rule["rule"] = text[len(SKIPPED_WITH_TEMPLATE):]
    out = []
    for kind, plural, scope, short, where in TEMPLATES:
        a = copy.deepcopy(analysis)
        a["description"] = (
            "The analysis block of the profiles " + where + " that name this template in "
            "spec.rollout.analysis.templateRef: the fields of a BoosterProfile's "
            "spec.rollout.analysis (docs/crd.md), each of which a profile may override.")
        out.append({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{plural}.booster.dev", "labels": profile["metadata"]["labels"]},
            "spec": {
                "group": "booster.dev",
                "scope": scope,
                "names": {"kind": kind, "listKind": kind + "List", "plural": plural,
                          "singular": kind.lower(), "shortNames": [short],
                          "categories": ["booster"]},
                "versions": [{
                    "name": "v1alpha1", "served": True, "storage": True,
                    "additionalPrinterColumns": [
                        {"name": "Mode", "type": "string", "jsonPath": ".spec.analysis.mode"},
                        {"name": "Interval", "type": "string",
                         "jsonPath": ".spec.analysis.interval"},
                        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}],
                    "schema": {"openAPIV3Schema": {
                        "type": "object",
                        "required": ["spec"],
                        "properties": {
                            "apiVersion": {"type": "string"},
                            "kind": {"type": "string"},
                            "metadata": {"type": "object", "properties": {"name": {
                                "type": "string", "maxLength": 253,
                                "pattern": "^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$"}}},
                            "spec": {"type": "object", "required": ["analysis"],
                                     "properties": {"analysis": a}}}}}}]}})
    return out


def load_crds():
    with open(CRD) as f:
        text = f.read()
    return text, [d for d in yaml.safe_load_all(text) if d]


def write_templates():
    text, docs = load_crds()
    profile_text = text.split("\n---\n")[0].rstrip("\n") + "\n"
    body = "---\n".join(yaml.safe_dump(t, sort_keys=False, width=100) for t in template_crds(docs[0]))
    with open(CRD, "w") as f:
        f.write(profile_text + "---" + TEMPLATE_HEADER + body)
    print(f"wrote the template CRDs into {os.path.relpath(CRD, ROOT)}")


def schema_for(docs, kind):
    for d in docs:
        if d["spec"]["names"]["kind"] == kind:
            return d["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return None


def offline():
    _, docs = load_crds()
    crd = docs[0]
    if docs[1:] != template_crds(crd):
        problem("the template CRDs in crds/boosterprofile.yaml are not the profile's analysis "
                "schema: run crds/check.py --write-templates")
    for t in docs[1:]:
        walk(t["spec"]["versions"][0]["schema"]["openAPIV3Schema"], t["spec"]["names"]["kind"])
        analysis = t["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"][
            "properties"]["analysis"]
        for rule in analysis.get("x-kubernetes-validations", []):
            if "templateRef" in rule.get("rule", ""):
                problem(f"{t['spec']['names']['kind']}.spec.analysis: a CEL rule names "
                        f"templateRef, which a template lacks: {rule['rule']!r} (only a "
                        f"leading {SKIPPED_WITH_TEMPLATE!r} is removed)")
    spec = crd["spec"]
    if spec["group"] != "booster.dev" or spec["scope"] != "Namespaced":
        problem("group/scope")
    if "bp" not in spec["names"].get("shortNames", []):
        problem("short name bp missing")
    if crd["metadata"]["name"] != f"{spec['names']['plural']}.{spec['group']}":
        problem("metadata.name must be <plural>.<group>")
    versions = spec["versions"]
    if sum(1 for v in versions if v.get("storage")) != 1:
        problem("exactly one storage version")
    v = versions[0]
    schema = v["schema"]["openAPIV3Schema"]
    walk(schema, "schema")
    if v.get("subresources", {}).get("status") != {}:
        problem("status subresource missing")
    cols = {c["name"]: c for c in v.get("additionalPrinterColumns", [])}
    for want in ("Target", "Phase", "Weight", "Step", "Age"):
        if want not in cols:
            problem(f"printer column {want} missing")
    for c in cols.values():
        if not schema_has(schema, c["jsonPath"]):
            problem(f"printer column {c['name']}: {c['jsonPath']} not in the schema")
    phases = schema["properties"]["status"]["properties"]["phase"]["enum"]
    want_phases = ["Pending", "Enrolling", "Progressing", "Paused", "Promoting", "Promoted",
                   "RollingBack", "RolledBack", "Failed"]
    if phases != want_phases:
        problem(f"status.phase enum {phases}")
    check_metric_names(schema)
    checked = 0
    for f in sorted(glob.glob(os.path.join(ROOT, "examples", "*.yaml")) +
                    glob.glob(os.path.join(ROOT, "crds", "testdata", "semantic", "*.yaml"))):
        with open(f) as fh:
            objects = [d for d in yaml.safe_load_all(fh) if d]
        for doc in objects:
            errs = []
            kind_schema = schema_for(docs, doc.get("kind"))
            if kind_schema is None:
                problem(f"{os.path.relpath(f, ROOT)}: kind {doc.get('kind')!r} is not Booster's")
                continue
            validate(doc, kind_schema, "", errs)
            for e in errs:
                problem(f"{os.path.relpath(f, ROOT)}: {e}")
            checked += 1
    print(f"offline: CRD structure checked, {checked} valid objects match their schemas")
    return crd


def kubectl(*args, stdin=None):
    return subprocess.run(["kubectl", *args], input=stdin, capture_output=True, text=True,
                          timeout=60)


def cluster(namespace):
    r = kubectl("apply", "--server-side", "--force-conflicts", "-f", CRD)
    if r.returncode != 0:
        problem(f"kubectl apply CRD: {r.stderr.strip()}")
        return
    print(r.stdout.strip())
    r = kubectl("wait", "--for=condition=Established", "--timeout=30s",
                "crd/boosterprofiles.booster.dev", "crd/boosteranalysistemplates.booster.dev",
                "crd/boosterclusteranalysistemplates.booster.dev")
    if r.returncode != 0:
        problem(f"CRD not established: {r.stderr.strip()}")
        return
    kubectl("create", "namespace", namespace)
    for f in sorted(glob.glob(os.path.join(ROOT, "examples", "*.yaml")) +
                    glob.glob(os.path.join(ROOT, "crds", "testdata", "semantic", "*.yaml"))):
        r = kubectl("apply", "--dry-run=server", "-n", namespace, "-f", f)
        rel = os.path.relpath(f, ROOT)
        if r.returncode != 0:
            problem(f"{rel} rejected: {r.stderr.strip()}")
        else:
            print(f"ok   accepted  {rel}")
    for f in sorted(glob.glob(os.path.join(ROOT, "crds", "testdata", "invalid", "*.yaml"))):
        rel = os.path.relpath(f, ROOT)
        with open(f) as fh:
            expect = next((l[len("# expect: "):].strip() for l in fh
                           if l.startswith("# expect: ")), None)
        r = kubectl("apply", "--dry-run=server", "-n", namespace, "-f", f)
        if r.returncode == 0:
            problem(f"{rel} accepted by the API server")
        elif expect and expect not in r.stderr:
            problem(f"{rel}: message lacks {expect!r}: {r.stderr.strip()}")
        else:
            print(f"ok   rejected  {rel}: {r.stderr.strip()}")
    # Real objects: defaults filled in by the server, printer columns.
    for f in sorted(glob.glob(os.path.join(ROOT, "examples", "*.yaml"))):
        r = kubectl("apply", "-n", namespace, "-f", f)
        if r.returncode != 0:
            problem(f"create {f}: {r.stderr.strip()}")
    r = kubectl("get", "bp", "-n", namespace, "-o", "wide")
    print(r.stdout.rstrip())
    r = kubectl("get", "bp", "payments", "-n", namespace, "-o",
                "jsonpath={.spec.rollout.progressDeadline} {.spec.rollout.analysis.confidence} "
                "{.spec.targetRef.apiVersion} {.spec.rollout.analysis.maxExtensions}")
    print(f"server defaults on payments: {r.stdout}")
    # The analysis fields have no server default (a shared template may set them; the
    # operator applies their defaults): confidence and maxExtensions stay empty.
    if r.stdout.split(" ") != ["10m", "", "apps/v1", ""]:
        problem(f"defaults not applied as documented: {r.stdout!r}")
    # targetRef is immutable.
    r = kubectl("patch", "bp", "checkout", "-n", namespace, "--type=merge", "-p",
                '{"spec":{"targetRef":{"name":"other"}}}')
    if r.returncode == 0 or "immutable" not in r.stderr:
        problem(f"targetRef change not refused: {r.stdout} {r.stderr}")
    else:
        print(f"ok   refused   targetRef change: {r.stderr.strip()}")
    # Status goes through the subresource only.
    r = kubectl("patch", "bp", "checkout", "-n", namespace, "--type=merge",
                "--subresource=status", "-p",
                '{"status":{"phase":"Progressing","currentStep":1,"canaryWeight":10}}')
    if r.returncode != 0:
        problem(f"status subresource patch: {r.stderr.strip()}")
    r = kubectl("patch", "bp", "checkout", "-n", namespace, "--type=merge",
                "--subresource=status", "-p", '{"status":{"phase":"Exploding"}}')
    if r.returncode == 0:
        problem("status.phase outside the enum accepted")
    r = kubectl("get", "bp", "checkout", "-n", namespace)
    print(r.stdout.rstrip())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cluster", action="store_true")
    ap.add_argument("--namespace", default="booster-crd-check")
    ap.add_argument("--keep", action="store_true", help="keep the scratch namespace")
    ap.add_argument("--write-templates", action="store_true")
    args = ap.parse_args()
    if args.write_templates:
        write_templates()
    offline()
    if args.cluster:
        try:
            cluster(args.namespace)
        finally:
            if not args.keep:
                kubectl("delete", "namespace", args.namespace, "--wait=false")
                # Cluster-scoped objects of the examples do not go with the namespace.
                kubectl("delete", "boosterclusteranalysistemplates", "--ignore-not-found",
                        "-l", "booster.dev/example=true")
    if problems:
        print(f"{len(problems)} problem(s)")
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
