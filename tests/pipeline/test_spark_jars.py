"""``SPARK_KAFKA_JARS``: a folder, a glob or a comma list (of jars, folders, globs, URLs) all
end up as the same ``spark.jars`` list; a name that holds no jar is refused up front. And a
Spark started by the pipeline binds its driver to loopback."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from pipeline.job import JarsError, kafka_jars

ROOT = Path(__file__).resolve().parents[2]
NAMES = ["spark-sql-kafka-0-10_2.13-4.0.1.jar", "kafka-clients-3.9.1.jar", "commons-pool2-2.12.0.jar"]


def make_jars(folder: Path, names=NAMES) -> list[str]:
    folder.mkdir(parents=True, exist_ok=True)
    for n in names:
        with zipfile.ZipFile(folder / n, "w") as z:
            z.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\n")
    (folder / "README.txt").write_text("not a jar")
    return sorted(str(folder / n) for n in names)


def test_folder_glob_and_comma_list_name_the_same_jars(tmp_path):
    jars = make_jars(tmp_path / "jars")
    assert kafka_jars(str(tmp_path / "jars")) == jars
    assert kafka_jars(str(tmp_path / "jars") + "/") == jars
    assert kafka_jars(str(tmp_path / "jars" / "*.jar")) == jars
    assert kafka_jars(",".join(reversed(jars))) == list(reversed(jars))  # a list keeps its order
    assert kafka_jars(f" {jars[0]} , ,{jars[1]},{jars[2]} ") == jars


def test_mixed_items_dedup_and_urls(tmp_path):
    jars = make_jars(tmp_path / "a")
    extra = make_jars(tmp_path / "b", ["spark-token-provider-kafka-0-10_2.13-4.0.1.jar"])
    got = kafka_jars(f"{tmp_path / 'a'},{tmp_path / 'a' / 'kafka-*.jar'},{tmp_path / 'b' / '*'},"
                     "https://repo.example/x.jar")
    assert got == jars + extra + ["https://repo.example/x.jar"]


def test_home_and_relative_paths(tmp_path, monkeypatch):
    jars = make_jars(tmp_path / "home" / "jars")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert kafka_jars("~/jars") == jars
    monkeypatch.chdir(tmp_path / "home")
    assert kafka_jars("jars/*.jar") == jars  # relative: made absolute for Spark


@pytest.mark.parametrize("bad", ["empty", "empty/*.jar", "missing", "missing.jar", "jars/*.war"])
def test_a_name_that_holds_no_jar_is_refused(tmp_path, bad):
    make_jars(tmp_path / "jars")
    (tmp_path / "empty").mkdir()
    with pytest.raises(JarsError, match="SPARK_KAFKA_JARS"):
        kafka_jars(str(tmp_path / bad))


def test_pipeline_refuses_a_folder_without_jars_before_starting_spark(tmp_path):
    (tmp_path / "empty").mkdir()
    env = dict(os.environ, SPARK_KAFKA_JARS=str(tmp_path / "empty"), PYTHONPATH=str(ROOT))
    r = subprocess.run([sys.executable, "-m", "pipeline.job", "--topic", "t", "--source", "kafka"],
                       capture_output=True, text=True, env=env, cwd=ROOT, timeout=60)
    assert r.returncode == 2 and "no *.jar in the folder" in r.stderr, r.stderr


def test_session_takes_a_folder_and_binds_the_driver_to_loopback(tmp_path):
    # its own process: one JVM per process, and the module-scoped test session may be running
    jars = make_jars(tmp_path / "jars")
    code = ("import json; from pipeline import job\n"
            "s = job.session('jars-test')\n"
            "c = s.sparkContext.getConf()\n"
            "import os, socket\n"
            "print(json.dumps({'jars': c.get('spark.jars'), 'local_ip': os.environ.get('SPARK_LOCAL_IP'),\n"
            "                  'host': socket.gethostbyname(c.get('spark.driver.host')),\n"
            "                  'listed': sorted(s.sparkContext._jsc.sc().listJars().mkString(',').split(','))}))\n"
            "s.stop()\n")
    env = {k: v for k, v in os.environ.items() if k != "SPARK_LOCAL_IP"}
    env.update(SPARK_KAFKA_JARS=str(tmp_path / "jars"), PYTHONPATH=str(ROOT))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT,
                       timeout=110)
    assert r.returncode == 0, r.stderr[-3000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["jars"] == ",".join(jars)
    assert [j.rsplit("/", 1)[-1] for j in out["listed"]] == sorted(NAMES)
    assert out["local_ip"] == "127.0.0.1" and out["host"].startswith("127.")
