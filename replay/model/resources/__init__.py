"""Read a DUCC resources directory (`$DUCC_HOME/resources`) into the bootstrap tables.

When rotation has removed the bootstrap section of rm.log, the RM's configuration can still be
read from the files it was started with: `ducc.properties`, the class file it names
(`ducc.rm.class.definitions`, normally `ducc.classes`), the node files the nodepools name, and
the optional user registry (`ducc.rm.user.registry`, normally `ducc.users`). The class file
alone is enough: without ducc.properties, DUCC's documented defaults stand in (`defaults`), and
the values that decide scheduling (quantum, initialization cap, doubling, prediction) are left
null for the replay to infer from the log (`replay.model.settings`).

    from replay.model.resources import read_resources
    tables = read_resources(Path("resources"))   # 'config', 'classes', 'nodepools'

The frames have the columns and dtypes of the log parser's tables (`replay.parsing.tables.SCHEMAS`) and
the values mean what the RM logged at bootstrap: class fields get the same inheritance and
defaults, nodepools the same quantum and node lists, config the same keys and value spelling.
`file`/`line` name the resources file and the 1-based line that defined the row (null line: a
built-in default). A configuration the RM would refuse to start with raises `InputError`.

Config keys that depend on the host the RM ran on rather than on these files (DUCC_HOME, JVM,
OS, versions, JMX URL, the DNS domain) are not produced.

Inside: `properties` (ducc.properties), `defaults` (DUCC's documented defaults), `classfile`
(class-file syntax), `classes` and `nodepools` (what the RM builds from the stanzas), `config`
(the bootstrap config rows), `files` (finding the named files), `frames` (the entry point and
the frames).
"""

from replay.model.resources.classfile import Stanza, Token, parse_stanzas, tokenize
from replay.model.resources.frames import read_resources
from replay.model.resources.properties import Properties, parse_properties

__all__ = ["Properties", "Stanza", "Token", "parse_properties", "parse_stanzas", "read_resources", "tokenize"]
