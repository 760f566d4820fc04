"""Strict readers for CTyun answers (pure).

An answer in an undocumented shape is an error naming the API, the field (as a dotted path)
and what came back, never a silent default or an empty result: a listing without `resultList`
must not read as "nothing exists", or an interrupted `pulumi up` orders a second cluster.
Unknown *extra* keys are accepted (APIs grow fields); missing documented keys that we use,
wrong types and values outside a documented enum are not.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, List, Optional, Tuple

from .errors import ResponseError

ABSENT = "<absent>"


class Obj:
    """One JSON object of an answer, read field by field."""

    def __init__(self, api: str, path: str, data: Any):
        if not isinstance(data, dict):
            raise ResponseError(api, path or "returnObj", "is not an object", data)
        self.api, self.path, self.data = api, path, data

    def _where(self, key: str) -> str:
        return f"{self.path}.{key}" if self.path else key

    def _get(self, key: str, required: bool, nullable: bool) -> Any:
        if key not in self.data:
            if required:
                raise ResponseError(self.api, self._where(key), "is missing")
            return None
        value = self.data[key]
        if value is None and not nullable:
            raise ResponseError(self.api, self._where(key), "is null", None)
        return value

    def has(self, key: str) -> bool:
        return key in self.data

    def str(self, key: str, required: bool = True, nullable: bool = False,
            nonempty: bool = False) -> Optional[str]:
        value = self._get(key, required, nullable)
        if value is None:
            return None
        if not isinstance(value, str):
            raise ResponseError(self.api, self._where(key), "is not a string", value)
        if nonempty and not value:
            raise ResponseError(self.api, self._where(key), "is empty", value)
        return value

    def int(self, key: str, required: bool = True, nullable: bool = False) -> Optional[int]:
        value = self._get(key, required, nullable)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            raise ResponseError(self.api, self._where(key), "is not an integer", value)
        return value

    def int_or_digits(self, key: str, required: bool = True) -> Optional[int]:
        """An integer that the docs show as a number in one API and a string in another."""
        value = self._get(key, required, nullable=False)
        if value is None:
            return None
        if isinstance(value, str) and value.strip().isdigit():
            return int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            raise ResponseError(self.api, self._where(key), "is not an integer", value)
        return value

    def bool(self, key: str, required: bool = True, nullable: bool = False,
             text_ok: bool = False) -> Optional[bool]:
        value = self._get(key, required, nullable)
        if value is None:
            return None
        if text_ok and isinstance(value, str) and value.lower() in ("true", "false"):
            return value.lower() == "true"
        if not isinstance(value, bool):
            raise ResponseError(self.api, self._where(key), "is not a boolean", value)
        return value

    def enum(self, key: str, values: Iterable[Any], required: bool = True,
             nullable: bool = False) -> Any:
        allowed = tuple(values)
        value = self._get(key, required, nullable)
        if value is None:
            return None
        if value not in allowed or isinstance(value, bool) != isinstance(allowed[0], bool):
            raise ResponseError(self.api, self._where(key),
                                f"is not one of the documented values {list(allowed)}", value)
        return value

    def obj(self, key: str) -> "Obj":
        return Obj(self.api, self._where(key), self._get(key, True, False))

    def list(self, key: str, required: bool = True) -> List[Any]:
        value = self._get(key, required, nullable=False)
        if value is None:
            return []
        if not isinstance(value, list):
            raise ResponseError(self.api, self._where(key), "is not a list", value)
        return value

    def objs(self, key: str, required: bool = True) -> List["Obj"]:
        return [Obj(self.api, f"{self._where(key)}[{i}]", item)
                for i, item in enumerate(self.list(key, required))]

    def strs(self, key: str, required: bool = True) -> List[str]:
        items = self.list(key, required)
        for i, item in enumerate(items):
            if not isinstance(item, str):
                raise ResponseError(self.api, f"{self._where(key)}[{i}]", "is not a string",
                                    item)
        return list(items)


def return_obj(api: str, value: Any) -> Obj:
    """`returnObj` as an object (it must be one)."""
    if value is None:
        raise ResponseError(api, "returnObj", "is missing or null", None)
    return Obj(api, "returnObj", value)


#: a listing that changes while it is paged (rows shift between pages) is read again this often
MAX_RESTARTS = 3
MAX_PAGES = 2000


def page_rows(api: str, value: Any, list_key: str) -> Tuple[List[Obj], int, int]:
    """One page of a paged listing: (rows, totalCount, totalPage), all three required."""
    ret = return_obj(api, value)
    return ret.objs(list_key), ret.int("totalCount"), ret.int("totalPage")


def all_pages(api: str, fetch: Callable[[int], Any], list_key: str) -> List[Obj]:
    """Every row of a paged listing (`pageNo` from 1), followed to `totalCount`/`totalPage`.

    `fetch(page_no)` returns one page's `returnObj` ({totalCount, totalPage, <list_key>}).
    A listing whose totalCount changes between pages is read again from page 1 (a row created
    or deleted meanwhile would shift the others and could hide one); an answer that stops
    before totalCount is an error, not a shorter list.
    """
    first_total: Optional[int] = None
    for _ in range(MAX_RESTARTS + 1):
        rows: List[Obj] = []
        first_total = None
        page = 1
        restarted = False
        while page <= MAX_PAGES:
            items, total, pages = page_rows(api, fetch(page), list_key)
            if first_total is None:
                first_total = total
            elif total != first_total:
                restarted = True
                break
            rows.extend(items)
            if len(rows) >= total:
                return rows
            if page >= pages or not items:
                raise ResponseError(api, f"returnObj.{list_key}",
                                    f"ended at page {page} of {pages} with {len(rows)} rows "
                                    f"while totalCount is {total}", len(items))
            page += 1
        if not restarted:
            raise ResponseError(api, "returnObj.totalPage", f"exceeds {MAX_PAGES} pages", page)
    raise ResponseError(api, "returnObj.totalCount",
                        f"kept changing during {MAX_RESTARTS + 1} readings", first_total)


def whole_list(api: str, value: Any, list_key: str = "resultList") -> List[Obj]:
    """An unpaged listing: `returnObj.<list_key>` must be present and a list."""
    return return_obj(api, value).objs(list_key)
