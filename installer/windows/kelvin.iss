; Inno Setup 6 script: Kelvin's per-user Windows installer, wrapping the PyInstaller folder app.
;
; Built by `python installer\build.py --installer` (on Windows, with Inno Setup 6), which passes
;   /DAppVersion=<pyproject.toml's version> /DSourceDir=dist\Kelvin /DIconFile=build\icons\kelvin.ico
;   /DOutputDir=dist
; and writes dist\Kelvin-<version>-setup.exe.
;
; Per user: no administrator rights, installs into %LOCALAPPDATA%\Programs\Kelvin, a Start menu
; entry and (ticked by the artist) a desktop shortcut. The uninstaller removes the program; the
; artist's projects and settings (%LOCALAPPDATA%\kelvin) stay unless the artist says otherwise when
; asked, or passes /REMOVEDATA to a silent uninstall (unins000.exe /SILENT /REMOVEDATA).

#ifndef AppVersion
  #error Pass the version: ISCC /DAppVersion=x.y.z (installer\build.py --installer reads it from pyproject.toml)
#endif
#ifndef SourceDir
  #define SourceDir "..\..\dist\Kelvin"
#endif
#ifndef IconFile
  #define IconFile "..\..\build\icons\kelvin.ico"
#endif
#ifndef OutputDir
  #define OutputDir "..\..\dist"
#endif

[Setup]
; The AppId ties upgrades and the uninstaller together: never change it.
AppId={{6E0C7B1D-3A5F-4C8E-9B2D-7F41A8C5E903}
AppName=Kelvin
AppVersion={#AppVersion}
AppVerName=Kelvin {#AppVersion}
AppPublisher=Kelvin
AppComments=A desktop companion for 3D rendering artists
VersionInfoVersion={#AppVersion}
VersionInfoProductVersion={#AppVersion}
PrivilegesRequired=lowest
DefaultDirName={autopf}\Kelvin
DefaultGroupName=Kelvin
DisableProgramGroupPage=yes
DisableDirPage=auto
UsePreviousAppDir=yes
ArchitecturesAllowed=x64compatible
ArchitecturesInstallIn64BitMode=x64compatible
MinVersion=10.0
SetupIconFile={#IconFile}
UninstallDisplayIcon={app}\Kelvin.exe
UninstallDisplayName=Kelvin {#AppVersion}
OutputDir={#OutputDir}
OutputBaseFilename=Kelvin-{#AppVersion}-setup
Compression=lzma2/max
SolidCompression=yes
WizardStyle=modern
; a Kelvin still running (in the tray) is asked to close before its files are replaced
CloseApplications=yes
RestartApplications=no

[Tasks]
Name: "desktopicon"; Description: "{cm:CreateDesktopIcon}"; GroupDescription: "{cm:AdditionalIcons}"; Flags: unchecked

[InstallDelete]
; an upgrade starts from a clean program folder: no library of the previous version lingers
Type: filesandordirs; Name: "{app}\_internal"

[Files]
Source: "{#SourceDir}\*"; DestDir: "{app}"; Flags: ignoreversion recursesubdirs createallsubdirs

[Icons]
Name: "{autoprograms}\Kelvin"; Filename: "{app}\Kelvin.exe"; WorkingDir: "{app}"; Comment: "Chat about lighting, shading and render settings"
Name: "{autodesktop}\Kelvin"; Filename: "{app}\Kelvin.exe"; WorkingDir: "{app}"; Tasks: desktopicon

[Run]
Filename: "{app}\Kelvin.exe"; Description: "{cm:LaunchProgram,Kelvin}"; Flags: nowait postinstall skipifsilent

[Code]
var
  RemoveData: Boolean;

function HasParam(Name: String): Boolean;
var
  I: Integer;
begin
  Result := False;
  for I := 1 to ParamCount do
    if CompareText(ParamStr(I), Name) = 0 then
      Result := True;
end;

function InitializeUninstall(): Boolean;
begin
  if UninstallSilent then
    RemoveData := HasParam('/REMOVEDATA')
  else
    RemoveData := MsgBox('Kelvin will be removed from this computer.' + #13#10#13#10 +
      'Also delete your Kelvin projects, memory and settings in' + #13#10 +
      ExpandConstant('{localappdata}\kelvin') + '?' + #13#10#13#10 +
      'Choose No to keep them (a later install picks them up again).',
      mbConfirmation, MB_YESNO or MB_DEFBUTTON2) = IDYES;
  Result := True;
end;

procedure CurUninstallStepChanged(CurUninstallStep: TUninstallStep);
begin
  { only Kelvin's own default folder: a data folder the artist chose elsewhere is never deleted }
  if (CurUninstallStep = usPostUninstall) and RemoveData then
    DelTree(ExpandConstant('{localappdata}\kelvin'), True, True, True);
end;
